// Package webhookcertificates gives the webhook servers of gardener-knative their serving
// certificates and every registration of theirs the CA bundle that verifies them, as Gardener's
// webhook certificate reconciler does for the servers it runs (gardener-operator, extensions):
// a CA and a serving certificate per Service, 30 days valid, rotated at 80% of their validity,
// the old CA trusted beside the new one until it expires.
//
// A registration (Mutating- or ValidatingWebhookConfiguration labelled
// app.kubernetes.io/part-of=gardener-knative) names its servers by clientConfig.service; the
// Secret of the same name and namespace holds that Service's certificate (tls.crt, tls.key, which
// the servers mount) and the bundle (ca.crt), which goes into the registration's caBundle. A
// registration annotated gardener-knative.io/inject-ca-from-secret: <namespace>/<name> gets the
// ca.crt of that Secret instead (the CA of an ingress in front of the servers, an operator's
// input; never written here).
//
// A seed registration annotated gardener-knative.io/seed-paths also gets its webhooks' paths,
// below the seed's proof (seedpaths.go).
//
// A rotation never lets a server present a certificate a registration does not trust yet: the
// new CA joins the bundle first, and its certificate waits in the Secret (pending) until every
// registration of the Service verifies it, every enrolled shoot's registrations carry the bundle
// (tenants.go), and PromotionDelay has passed.
package webhookcertificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

const (
	// LabelPartOf selects the registrations served here.
	LabelPartOf = "app.kubernetes.io/part-of=gardener-knative"
	// AnnotationInjectFromSecret names the Secret (<namespace>/<name>) whose ca.crt a registration
	// gets, as cert-manager's cainjector reads cert-manager.io/inject-ca-from-secret.
	AnnotationInjectFromSecret = "gardener-knative.io/inject-ca-from-secret"
	// AnnotationTrustedSince is when every registration was first seen trusting a pending
	// certificate's CA (RFC 3339).
	AnnotationTrustedSince = "gardener-knative.io/trusted-since"
	// LabelServingCertificate marks the Secrets issued here; their events are watched.
	LabelServingCertificate = "gardener-knative.io/serving-certificate"
)

// Config is when certificates are issued, rotated and promoted, and where.
type Config struct {
	// Namespace is the namespace of the part of config/ this instance serves (each part that runs
	// webhook servers deploys one): it issues certificates for that namespace's Services and
	// injects bundles into the registrations served from there; another part's registrations are
	// left to that part's instance.
	Namespace string `envconfig:"GARDENER_KNATIVE_NAMESPACE" default:"gardener-knative"`
	// Validity of a CA and its serving certificate (Gardener's webhook CA: 30 days).
	Validity time.Duration `envconfig:"CERTIFICATE_VALIDITY" default:"720h"`
	// PromotionDelay is the least time a new CA is trusted before its certificate is served.
	PromotionDelay time.Duration `envconfig:"CERTIFICATE_PROMOTION_DELAY" default:"1m"`
}

// The reconcilers, one per registration kind, and their sweeps.
const (
	Mutating         = "mutating"
	Validating       = "validating"
	ResyncMutating   = "resync-mutating"
	ResyncValidating = "resync-validating"
)

// Function is the webhook certificate reconciler.
var Function = &function.Function{
	Name: "webhookcertificates",
	// The seed's first: its namespace is the default one (Config.Namespace) and the one its
	// tests serve it in.
	Parts:  []function.Part{function.Seed, function.Runtime},
	Config: &Config{},
	RBAC: []rbacv1.PolicyRule{{
		APIGroups: []string{admissionregistrationv1.GroupName},
		Resources: []string{kinds.MutatingWebhookConfiguration.Resource, kinds.ValidatingWebhookConfiguration.Resource},
		Verbs:     []string{"get", "list", "patch"},
	}},
	// While a rotation waits (in the seed only: the runtime cluster has no tenants): what each
	// enrolled tenant's Cluster records of its shoot.
	PartRBAC: map[function.Part][]rbacv1.PolicyRule{
		function.Seed: {{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"list"}}},
	},
	// The certificates' Secrets, and the inputs a registration may name, in our namespace only.
	NamespacedRBAC: map[string][]rbacv1.PolicyRule{
		function.OwnNamespace: {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "patch"}}},
	},
	Reconcilers: []function.Reconciler{
		{Name: Mutating, For: kinds.MutatingWebhookConfiguration, New: newReconciler(mutating)},
		{Name: Validating, For: kinds.ValidatingWebhookConfiguration, New: newReconciler(validating)},
	},
	Watches: []function.Watch{
		{Kind: kinds.MutatingWebhookConfiguration, Reconciler: Mutating, LabelSelector: LabelPartOf, Predicate: notDeleted},
		{Kind: kinds.ValidatingWebhookConfiguration, Reconciler: Validating, LabelSelector: LabelPartOf, Predicate: notDeleted},
		// A certificate's Secret changed (rotated, or an operator's rotate-ca-start): the
		// registrations it serves.
		{Kind: kinds.Secret, Reconciler: Mutating, LabelSelector: LabelServingCertificate, Map: mapSecretTo(mutating)},
		{Kind: kinds.Secret, Reconciler: Validating, LabelSelector: LabelServingCertificate, Map: mapSecretTo(validating)},
	},
	// Gardener's certificate reconciler resyncs every 5 minutes (DefaultSyncPeriod); a sweep also
	// catches an input Secret's change, which sends no event.
	Sweeps: []function.Sweep{
		{Name: ResyncMutating, Schedule: "*/5 * * * *", Reconciler: Mutating, Primary: function.List{Kind: kinds.MutatingWebhookConfiguration, LabelSelector: LabelPartOf}},
		{Name: ResyncValidating, Schedule: "*/5 * * * *", Reconciler: Validating, Primary: function.List{Kind: kinds.ValidatingWebhookConfiguration, LabelSelector: LabelPartOf}},
	},
}

func notDeleted(ev function.Event) bool { return !ev.Deleted }

// registrationKind is what the reconciler needs of one registration kind: a new object and list,
// and the client configurations of an object's webhooks.
type registrationKind struct {
	name    string
	object  func() client.Object
	list    func() client.ObjectList
	items   func(client.ObjectList) []client.Object
	configs func(client.Object) []*admissionregistrationv1.WebhookClientConfig
}

var mutating = registrationKind{
	name:    kinds.MutatingWebhookConfiguration.Kind,
	object:  func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
	list:    func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
	items:   Registrations,
	configs: ClientConfigs,
}

var validating = registrationKind{
	name:    kinds.ValidatingWebhookConfiguration.Kind,
	object:  func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
	list:    func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
	items:   Registrations,
	configs: ClientConfigs,
}

var kindsByName = []registrationKind{mutating, validating}

// source is where a webhook's CA bundle comes from: a Secret, issued here or an input.
type source struct {
	secret function.Key
	issued bool
}

// sourceOf is the source of one webhook of a registration; false when it has none (a url
// without the annotation: its caBundle is left as it is).
func sourceOf(obj client.Object, cc *admissionregistrationv1.WebhookClientConfig) (source, bool) {
	if key, ok := InjectedFrom(obj); ok {
		return source{secret: key}, true
	}
	if cc.Service != nil {
		return source{secret: function.Key{Namespace: cc.Service.Namespace, Name: cc.Service.Name}, issued: true}, true
	}
	return source{}, false
}

// InjectedFrom is the Secret a registration's AnnotationInjectFromSecret names; false without the
// annotation.
func InjectedFrom(obj metav1.Object) (function.Key, bool) {
	ref, ok := obj.GetAnnotations()[AnnotationInjectFromSecret]
	if !ok {
		return function.Key{}, false
	}
	namespace, name, _ := strings.Cut(ref, "/")
	return function.Key{Namespace: namespace, Name: name}, true
}

// mapSecretTo maps a Secret's event to the registrations of one kind that it serves (one LIST).
func mapSecretTo(kind registrationKind) function.Mapper {
	return func(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
		list := kind.list()
		if err := reader.List(ctx, list, labelled()); err != nil {
			return nil, fmt.Errorf("listing the registrations: %w", err)
		}
		var keys []function.Key
		for _, obj := range kind.items(list) {
			for _, cc := range kind.configs(obj) {
				if src, ok := sourceOf(obj, cc); ok && src.secret == ev.Key {
					keys = append(keys, function.Key{Name: obj.GetName()})
					break
				}
			}
		}
		return keys, nil
	}
}

func labelled() client.ListOption {
	return client.MatchingLabels{"app.kubernetes.io/part-of": "gardener-knative"}
}

// Reconciler brings one registration's caBundles in line with their sources, issuing and
// rotating the serving certificates on the way.
type Reconciler struct {
	Kind   registrationKind
	Config *Config
	Source function.ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

func newReconciler(kind registrationKind) func(function.Deps) (function.Handler, error) {
	return func(deps function.Deps) (function.Handler, error) {
		return &Reconciler{Kind: kind, Config: deps.Config.(*Config), Source: deps.Source, Clock: deps.Clock, Log: deps.Log}, nil
	}
}

// Reconcile sets every webhook's caBundle to its source's bundle. A reconcile that changed the
// registration's bundles decides once more: what a pending rotation waited for (every
// registration trusting the new CA) may have been this very write, whose event is its own echo
// (not reconciled again by the runtime).
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	obj := r.Kind.object()
	if err := req.Reader.Get(ctx, req.Key, obj); err != nil {
		return err
	}
	if obj.GetLabels()["app.kubernetes.io/part-of"] != "gardener-knative" {
		return nil
	}
	served, err := r.servedHere(obj)
	if err != nil || !served {
		return err
	}
	// The seed's paths depend on the keys alone: read once, written in each pass's patch.
	paths, err := r.seedPathsOf(ctx, req, obj)
	if err != nil {
		return err
	}
	for pass := 0; pass < 2; pass++ {
		patched, err := r.inject(ctx, req, obj, paths)
		if err != nil || !patched {
			return err
		}
	}
	return nil
}

// servedHere says whether the registration's webhooks are served from this instance's namespace:
// false for another part's (its instance's), terminal for webhooks of a namespace of no part or of
// several namespaces, whose Secrets would be read or written where this function has no business
// (and no RBAC).
func (r *Reconciler) servedHere(obj client.Object) (bool, error) {
	namespaces := map[string]bool{}
	for _, cc := range r.Kind.configs(obj) {
		if src, ok := sourceOf(obj, cc); ok {
			namespaces[src.secret.Namespace] = true
		}
	}
	if len(namespaces) > 1 {
		return false, function.Terminal(fmt.Errorf("%s %s: its webhooks are served from the namespaces %v, so it gets no bundle here", r.Kind.name, obj.GetName(), slices.Sorted(maps.Keys(namespaces))))
	}
	for namespace := range namespaces {
		if namespace == r.Config.Namespace {
			return true, nil
		}
		if _, ours := function.PartIn(namespace); ours {
			return false, nil
		}
		return false, function.Terminal(fmt.Errorf("%s %s: its webhooks are served from %s, not %s, so it gets no bundle here", r.Kind.name, obj.GetName(), namespace, r.Config.Namespace))
	}
	// No webhook has a source: nothing to inject.
	return false, nil
}

// inject takes each source of the registration's webhooks one step and writes their bundles, and
// the seed's paths (seedPathsOf), into obj; patched says that obj changed.
func (r *Reconciler) inject(ctx context.Context, req function.Request, obj client.Object, paths map[string]func(*admissionregistrationv1.WebhookClientConfig)) (bool, error) {
	bundles := map[source][]byte{}
	for _, cc := range r.Kind.configs(obj) {
		src, ok := sourceOf(obj, cc)
		if !ok {
			continue
		}
		if _, done := bundles[src]; done {
			continue
		}
		var err error
		if src.issued {
			bundles[src], err = r.serving(ctx, req, src.secret)
		} else {
			bundles[src], err = r.input(ctx, req, src.secret)
		}
		if err != nil {
			return false, fmt.Errorf("%s %s: %w", r.Kind.name, obj.GetName(), err)
		}
	}
	patched, err := r.Source.Writer.Patch(ctx, obj, func() {
		for _, cc := range r.Kind.configs(obj) {
			if src, ok := sourceOf(obj, cc); ok {
				cc.CABundle = bundles[src]
			}
		}
		for name, cc := range namedClientConfigs(obj) {
			if setPath, ok := paths[name]; ok {
				setPath(cc)
			}
		}
	})
	if patched && err == nil {
		r.Log.Info("CA bundle and seed paths written", "registration", obj.GetName(), "sources", len(bundles), "seedPaths", len(paths))
	}
	return patched && err == nil, err
}

// input is the ca.crt of a Secret an operator provides.
func (r *Reconciler) input(ctx context.Context, req function.Request, key function.Key) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := req.Reader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			// The operator's input is missing: nothing to inject until it exists (the sweep
			// comes back); the registration keeps what it has.
			return nil, function.Terminal(fmt.Errorf("the Secret %s named by %s does not exist", key, AnnotationInjectFromSecret))
		}
		return nil, err
	}
	bundle := secret.Data[KeyBundle]
	if len(ParseBundle(bundle)) == 0 {
		return nil, function.Terminal(fmt.Errorf("the Secret %s holds no certificate in %s", key, KeyBundle))
	}
	return bundle, nil
}

// serving takes the Service's certificate one step (Decide) and returns its bundle.
func (r *Reconciler) serving(ctx context.Context, req function.Request, key function.Key) ([]byte, error) {
	now := r.Clock.Now()
	host := key.Name + "." + key.Namespace + ".svc"
	secret := &corev1.Secret{}
	exists := true
	if err := req.Reader.Get(ctx, key, secret); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		exists = false
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				"app.kubernetes.io/part-of": "gardener-knative", LabelServingCertificate: "true",
			}},
			Type: corev1.SecretTypeTLS,
		}
	}
	state := Read(secret.Data)
	state.RotationRequested = secret.Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.OperationRotateCAStart
	if since, err := time.Parse(time.RFC3339, secret.Annotations[AnnotationTrustedSince]); err == nil {
		state.TrustedSince = since
	}
	policy := Policy{Validity: r.Config.Validity, PromotionDelay: r.Config.PromotionDelay}
	step, err := Decide(now, state, host, policy, func() (bool, error) {
		return r.trusted(ctx, key, state.Pending, secret, host, now)
	})
	if err != nil {
		return nil, err
	}
	var issued Issued
	if step == Issue || step == Prepare {
		if issued, err = IssueFor(ctx, key.Name, key.Namespace, now.Add(policy.Validity)); err != nil {
			return nil, err
		}
	}
	mutate, err := apply(step, now, state, secret, issued)
	if err != nil {
		return nil, err
	}
	if !exists {
		mutate()
		if err := r.Source.Writer.Create(ctx, secret); err != nil {
			// AlreadyExists: a reconcile of another registration was first; from its
			// certificate on the retry.
			return nil, fmt.Errorf("creating the serving certificate %s: %w", key, err)
		}
	} else if _, err := r.Source.Writer.Patch(ctx, secret, mutate); err != nil {
		return nil, fmt.Errorf("updating the serving certificate %s: %w", key, err)
	}
	if step != Keep || !exists {
		r.Log.Info("serving certificate "+stepNames[step], "secret", key, "notAfter", notAfter(secret))
	}
	return secret.Data[KeyBundle], nil
}

var stepNames = map[Step]string{Keep: "kept", Issue: "issued", Prepare: "rotation prepared", Trust: "trusted by every registration", Distrust: "not trusted by every registration", Promote: "rotation promoted", Prune: "expired CAs pruned"}

func notAfter(secret *corev1.Secret) time.Time {
	if c := leaf(secret.Data[KeyCertificate], secret.Data[KeyPrivateKey]); c != nil {
		return c.NotAfter
	}
	return time.Time{}
}

// apply returns the change a step makes to the Secret.
func apply(step Step, now time.Time, state Serving, secret *corev1.Secret, issued Issued) (func(), error) {
	var ca []*x509.Certificate
	if step == Issue || step == Prepare {
		c, err := parseCA(issued.CA)
		if err != nil {
			return nil, err
		}
		ca = append(ca, c)
	}
	bundle := EncodeBundle(now, append(state.Bundle, ca...))
	return func() {
		// The operator's request is answered: a rotation started, or this reconcile.
		switch op := secret.Annotations[v1beta1constants.GardenerOperation]; {
		case op == v1beta1constants.GardenerOperationReconcile, op == v1beta1constants.OperationRotateCAStart && step == Prepare:
			delete(secret.Annotations, v1beta1constants.GardenerOperation)
		}
		if step == Keep {
			return
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		switch step {
		case Issue:
			secret.Data[KeyCertificate], secret.Data[KeyPrivateKey] = issued.Certificate, issued.PrivateKey
			delete(secret.Data, KeyPendingCertificate)
			delete(secret.Data, KeyPendingPrivateKey)
			delete(secret.Annotations, AnnotationTrustedSince)
		case Prepare:
			secret.Data[KeyPendingCertificate], secret.Data[KeyPendingPrivateKey] = issued.Certificate, issued.PrivateKey
		case Trust:
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, AnnotationTrustedSince, now.UTC().Format(time.RFC3339))
		case Distrust:
			delete(secret.Annotations, AnnotationTrustedSince)
		case Promote:
			secret.Data[KeyCertificate], secret.Data[KeyPrivateKey] = secret.Data[KeyPendingCertificate], secret.Data[KeyPendingPrivateKey]
			delete(secret.Data, KeyPendingCertificate)
			delete(secret.Data, KeyPendingPrivateKey)
			delete(secret.Annotations, AnnotationTrustedSince)
		}
		secret.Data[KeyBundle] = bundle
	}, nil
}

// trusted says whether every webhook of every registration that the Service's certificate
// serves verifies the pending certificate, the garden's registrations and every enrolled tenant's
// shoot carry the Secret's bundle (three live LISTs, only while one is pending).
func (r *Reconciler) trusted(ctx context.Context, key function.Key, pending *x509.Certificate, secret *corev1.Secret, host string, now time.Time) (bool, error) {
	bundle := secret.Data[KeyBundle]
	if !GardenTrusts(secret, bundle) {
		r.Log.Info("rotation waits: the garden's registrations do not carry the new bundle yet", "secret", key)
		return false, nil
	}
	for _, kind := range kindsByName {
		list := kind.list()
		if err := r.Source.Reader.List(ctx, list, labelled()); err != nil {
			return false, fmt.Errorf("listing the registrations: %w", err)
		}
		for _, obj := range kind.items(list) {
			for _, cc := range kind.configs(obj) {
				if src, ok := sourceOf(obj, cc); ok && src.issued && src.secret == key && !Verifies(cc.CABundle, pending, host, now) {
					r.Log.Info("rotation waits: a registration does not trust the new CA yet", "secret", key, "registration", obj.GetName())
					return false, nil
				}
			}
		}
	}
	if r.Config.Namespace != function.Seed.Namespace() {
		// The shoots trust the seed part's servers alone (shootcabundle).
		return true, nil
	}
	tn, err := r.untrustingTenant(ctx, key, bundle)
	if err != nil {
		return false, err
	}
	if tn != "" {
		r.Log.Info("rotation waits: a shoot's registrations do not carry the new bundle yet", "secret", key, "tenant", tn)
		return false, nil
	}
	return true, nil
}
