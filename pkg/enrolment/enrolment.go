// Package enrolment enrols a shoot with the seed's webhook servers, as gardenlet registers its
// own resource manager's webhooks with the shoot: it renders the registrations of config/shoot/
// (embedded, package config) for one tenant, each at the tenant's path with the servers' CA,
// keeps only those the tenant's settings say gardenlet would register (a webhook's AppliesTo:
// not pod-scheduler-name for a balanced shoot, nothing of Pods and Nodes for a workerless one),
// and applies them to the shoot, deleting the registrations of ours that no longer apply. It is
// idempotent: run it again whenever the shoot changes. The command webhooks/enrol runs it.
package enrolment

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/config"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/webhooks"
)

// Options say how to render a tenant's registrations.
type Options struct {
	// CABundle is the PEM of the CA of the servers reached through Knative's ingress (its
	// cluster-local TLS): what the authorizer's kubeconfig and the registrations of Knative
	// Services trust, and with Server, that server's for all. Enrol defaults it to the Secret
	// knative-ingress-ca of the servers' namespace, and gives the registrations that name a
	// serving certificate's Service (grm-webhooks-tls) that certificate's bundle, and those of
	// Knative Services the Secret's CA where there is one.
	CABundle []byte
	// Server, when set, replaces the scheme and host of every url (e.g. one local server for
	// all three Services); the templates' cluster-local hosts otherwise.
	Server string
	// ScaleToZero renders the scale-to-zero variant (config/scale-to-zero/shoot/).
	ScaleToZero bool
	// OptIn names webhooks of config/shoot-opt-in/ to register too (e.g. endpoint-slice-hints).
	OptIn []string
	// Key signs the tenant's proof in every url (pkg/tenantproof). Enrol defaults it to the
	// signing key of the servers' namespace, making the first key of the seed when there is none.
	Key tenantproof.Key
	// TokenWait is how long Enrol waits for the token requestor's first token of the servers'
	// identity in the shoot (DefaultTokenWait when zero).
	TokenWait time.Duration
}

// DefaultTokenWait is Options.TokenWait's default: the token requestor writes the token on the
// Secret's event, within seconds, or on its sweep, within a minute.
const DefaultTokenWait = 2 * time.Minute

// Registrations are the webhook registrations of a tenant: those of config/shoot/ (and the named
// opt-in ones) whose webhook applies to a tenant with settings, at the tenant's path.
func Registrations(t tenant.Name, settings *tenant.Settings, opts Options) ([]client.Object, error) {
	if opts.Key.IsZero() {
		return nil, tenantproof.ErrNoKey
	}
	files, err := templates(opts)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, file := range files {
		name := webhookOf(file)
		c, ok := constructor(name)
		if !ok {
			return nil, fmt.Errorf("%s registers %q, which the server does not know", file, name)
		}
		if c.AppliesTo != nil && !c.AppliesTo(settings) {
			continue
		}
		objs, err := decode(file)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if err := forTenant(obj, t, opts); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// templates are the registration files of the variant asked: config/shoot/'s, with the
// scale-to-zero variant's where it has one, and the opt-in ones named.
func templates(opts Options) ([]string, error) {
	files, err := fs.Glob(config.Shoot, "shoot/webhook-*.yaml")
	if err != nil {
		return nil, err
	}
	for _, name := range opts.OptIn {
		file := "shoot-opt-in/webhook-" + name + ".yaml"
		if _, err := fs.Stat(config.Shoot, file); err != nil {
			return nil, fmt.Errorf("no opt-in registration of %q: %w", name, err)
		}
		files = append(files, file)
	}
	if opts.ScaleToZero {
		for i, f := range files {
			variant := "scale-to-zero/" + f
			if _, err := fs.Stat(config.Shoot, variant); err == nil {
				files[i] = variant
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// webhookOf is the webhook a registration file is named after (webhook-<name>.yaml).
func webhookOf(file string) string {
	return strings.TrimSuffix(strings.TrimPrefix(path.Base(file), "webhook-"), ".yaml")
}

func constructor(name string) (webhook.Constructor, bool) {
	i := slices.IndexFunc(webhooks.All, func(c webhook.Constructor) bool { return c.Name == name })
	if i < 0 {
		return webhook.Constructor{}, false
	}
	return webhooks.All[i], true
}

// decode reads the registrations of a file.
func decode(file string) ([]client.Object, error) {
	data, err := fs.ReadFile(config.Shoot, file)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []client.Object
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(doc) == 0 {
			continue
		}
		var obj client.Object
		switch kind, _ := doc["kind"].(string); kind {
		case "MutatingWebhookConfiguration":
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		case "ValidatingWebhookConfiguration":
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		default:
			return nil, fmt.Errorf("%s: a %s is no webhook registration", file, kind)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s registers nothing", file)
	}
	return out, nil
}

// forTenant points every webhook of a registration at the tenant's path (and opts.Server), with
// the CA bundle.
func forTenant(obj client.Object, t tenant.Name, opts Options) error {
	for _, cc := range webhookcertificates.ClientConfigs(obj) {
		if cc.URL == nil {
			return errors.New("a webhook has no url")
		}
		u, err := tenantproof.URL(*cc.URL, t, opts.Key, opts.Server)
		if err != nil {
			return err
		}
		cc.URL, cc.CABundle = &u, opts.CABundle
	}
	return nil
}

// AuthorizerKubeconfig is the file the tenant's kube-apiserver authorizes gardener-node-agents
// with (--authorization-webhook-config-file), from config/shoot/'s example: the server at the
// tenant's path, with the CA bundle. Nil when the node-agent-authorizer does not apply to the
// tenant (a workerless shoot has no node agents).
func AuthorizerKubeconfig(t tenant.Name, settings *tenant.Settings, opts Options) ([]byte, error) {
	if c, ok := constructor("node-agent-authorizer"); ok && c.AppliesTo != nil && !c.AppliesTo(settings) {
		return nil, nil
	}
	if opts.Key.IsZero() {
		return nil, tenantproof.ErrNoKey
	}
	example, err := fs.ReadFile(config.Shoot, "shoot/authorization-webhook.kubeconfig.example")
	if err != nil {
		return nil, err
	}
	// The example leaves the CA for the operator to fill in.
	example = []byte(strings.Replace(string(example), "<base64 PEM of the CA>", base64.StdEncoding.EncodeToString(opts.CABundle), 1))
	kc, err := clientcmd.Load(example)
	if err != nil {
		return nil, err
	}
	for _, c := range kc.Clusters {
		if c.Server, err = tenantproof.URL(c.Server, t, opts.Key, opts.Server); err != nil {
			return nil, err
		}
		c.CertificateAuthorityData = opts.CABundle
	}
	return clientcmd.Write(*kc)
}

// Apply creates or updates objs in c and deletes the registrations of ours (tenant.RegistrationLabels) there that
// objs leave out. It returns the names of what it deleted.
func Apply(ctx context.Context, c client.Client, objs []client.Object) (deleted []string, err error) {
	keep := sets.New[string]()
	for _, obj := range objs {
		keep.Insert(obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.GetName())
		if err := apply(ctx, c, obj); err != nil {
			return nil, fmt.Errorf("applying %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	for _, list := range []client.ObjectList{&admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}} {
		if err := c.List(ctx, list, client.MatchingLabels(tenant.RegistrationLabels)); err != nil {
			return nil, err
		}
		items, kind := registrationsOf(list)
		for _, obj := range items {
			if keep.Has(kind + "/" + obj.GetName()) {
				continue
			}
			if err := c.Delete(ctx, obj, client.Preconditions{UID: new(obj.GetUID()), ResourceVersion: new(obj.GetResourceVersion())}); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
			}
			deleted = append(deleted, kind+"/"+obj.GetName())
		}
	}
	return deleted, nil
}

func registrationsOf(list client.ObjectList) ([]client.Object, string) {
	var out []client.Object
	switch l := list.(type) {
	case *admissionregistrationv1.MutatingWebhookConfigurationList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return out, "MutatingWebhookConfiguration"
	case *admissionregistrationv1.ValidatingWebhookConfigurationList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return out, "ValidatingWebhookConfiguration"
	}
	return nil, ""
}

// FieldOwner is the field manager of what the enrolment applies.
const FieldOwner = "gardener-knative-enrolment"

// apply applies obj server-side: what the enrolment renders is wholly its own.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// Result is what Enrol did.
type Result struct {
	// Settings are the tenant's, as the servers read them.
	Settings *tenant.Settings
	// Registered and Deleted name the registrations applied to the shoot and removed from it.
	Registered, Deleted []string
	// AuthorizerKubeconfig is the shoot kube-apiserver's authorization webhook file (nil where
	// the node-agent-authorizer does not apply).
	AuthorizerKubeconfig []byte
}

// Enrol enrols tenant t with the seed's webhook servers and functions (in namespace
// serversNamespace): their access to the tenant's namespace in the seed (a RoleBinding there of
// every tenant role of config/seed/, pkg/tenant/access), then the registrations that apply
// to its shoot, read and applied as the servers do: the tenant's settings from its Cluster, the
// shoot reached with the tenant's own access Secrets (the shoot's gardener-resource-manager).
//
// The tenant's Cluster is labelled enrolled (tenant.EnrolledLabel) first: from then on the
// seed's functions and webhook servers serve the tenant, within the servers' unknown-tenant TTL
// (10 s) and the sources' discovery interval (docs/cutover.md).
func Enrol(ctx context.Context, seed client.Client, t tenant.Name, serversNamespace string, opts Options) (*Result, error) {
	if _, err := access.Bind(ctx, seed, t, serversNamespace); err != nil {
		return nil, fmt.Errorf("tenant access in the seed: %w", err)
	}
	if err := markEnrolled(ctx, seed, t, true); err != nil {
		return nil, err
	}
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme, SharedMapper: seed.RESTMapper()})
	if err != nil {
		return nil, err
	}
	shoot, err := tenants.Client(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := enrolWebhookAccess(ctx, seed, shoot, t, opts.TokenWait); err != nil {
		return nil, fmt.Errorf("the webhook servers' identity in the shoot of %s: %w", t, err)
	}
	settings, err := tenants.Settings(ctx, t)
	if err != nil {
		return nil, err
	}
	bundles, err := bundlesOf(ctx, seed, serversNamespace)
	if err != nil {
		return nil, err
	}
	if opts.CABundle == nil {
		opts.CABundle = bundles.Ingress
	}
	if opts.Key.IsZero() {
		if opts.Key, err = tenantproof.SigningKey(ctx, seed, serversNamespace, time.Now()); err != nil {
			return nil, err
		}
	}
	objs, err := Registrations(t, settings, opts)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		configs := webhookcertificates.ClientConfigs(obj)
		bundles.Inject(configs)
		for _, cc := range configs {
			if len(cc.CABundle) == 0 {
				return nil, fmt.Errorf("%s %s: nothing to trust at %s: its serving certificate is not issued yet (webhookcertificates issues it within seconds of the apply), or the Secret %s/%s is missing", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), ptr.Deref(cc.URL, ""), serversNamespace, webhookcertificates.IngressCA)
			}
		}
	}
	result := &Result{Settings: settings}
	for _, obj := range objs {
		result.Registered = append(result.Registered, obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName())
	}
	if result.Deleted, err = Apply(ctx, shoot, objs); err != nil {
		return nil, fmt.Errorf("registrations in the shoot of %s: %w", t, err)
	}
	if result.AuthorizerKubeconfig, err = AuthorizerKubeconfig(t, settings, opts); err != nil {
		return nil, err
	}
	return result, nil
}

// enrolWebhookAccess gives the webhook servers their read-only identity in t's shoot
// (pkg/tenant/webhookaccess): its RBAC there, and the token requestor Secret in t's namespace of
// the seed. It waits up to tokenWait for the token requestor's first token, since the registrations
// applied next are answered only once the servers can read the shoot.
func enrolWebhookAccess(ctx context.Context, seed, shoot client.Client, t tenant.Name, tokenWait time.Duration) error {
	objs, err := webhookaccess.ShootObjects()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := apply(ctx, shoot, obj); err != nil {
			return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
		}
	}
	secret := webhookaccess.Secret(t)
	if err := seed.Create(ctx, secret); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if tokenWait == 0 {
		tokenWait = DefaultTokenWait
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, tokenWait, true, func(ctx context.Context) (bool, error) {
		if err := seed.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(secret.Data["token"]) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("no token in %s/%s after %s: the token requestor (the function tokenrequestor, on per seed) writes it: %w", t, webhookaccess.SecretName, tokenWait, err)
	}
	return nil
}

// unenrolWebhookAccess removes what enrolWebhookAccess made, the ServiceAccount the token
// requestor made in the shoot too (shoot is nil where it cannot be reached any more).
func unenrolWebhookAccess(ctx context.Context, seed, shoot client.Client, t tenant.Name) error {
	if shoot != nil {
		objs, err := webhookaccess.ShootObjects()
		if err != nil {
			return err
		}
		for _, obj := range append(objs, webhookaccess.ServiceAccount()) {
			if err := shoot.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
			}
		}
	}
	return client.IgnoreNotFound(seed.Delete(ctx, webhookaccess.Secret(t)))
}

// bundlesOf reads what the registrations trust from the Secrets of the servers' namespace: the
// serving certificates webhookcertificates issues and the ingress's CA (the operator's input), as
// the function shootcabundle keeps them through rotations.
func bundlesOf(ctx context.Context, seed client.Reader, namespace string) (webhookcertificates.Bundles, error) {
	secrets := &corev1.SecretList{}
	if err := seed.List(ctx, secrets, client.InNamespace(namespace)); err != nil {
		return webhookcertificates.Bundles{}, fmt.Errorf("reading the servers' certificates: %w", err)
	}
	return webhookcertificates.BundlesOf(namespace, secrets.Items), nil
}

// Unenrol hands tenant t back to gardenlet's own resource manager: the registrations of ours are
// deleted from its shoot (reached while it is still enrolled), then the label is removed from
// its Cluster, and last our identities' access to its namespace. The functions and webhooks stop
// serving it within the discovery interval of the sources and TENANT_CACHE_TTL of the processes
// that had its client (docs/cutover.md). It returns what it deleted from the shoot.
func Unenrol(ctx context.Context, seed client.Client, t tenant.Name) ([]string, error) {
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme, SharedMapper: seed.RESTMapper()})
	if err != nil {
		return nil, err
	}
	var deleted []string
	shoot, err := tenants.Client(ctx, t)
	switch {
	case err == nil:
		if deleted, err = Apply(ctx, shoot, nil); err != nil {
			return nil, fmt.Errorf("registrations in the shoot of %s: %w", t, err)
		}
	case !clients.IsNotEnrolled(err):
		return nil, err
	}
	if err := markEnrolled(ctx, seed, t, false); err != nil {
		return nil, err
	}
	if err := unenrolWebhookAccess(ctx, seed, shoot, t); err != nil {
		return nil, fmt.Errorf("the webhook servers' identity in the shoot of %s: %w", t, err)
	}
	if err := access.Unbind(ctx, seed, t); err != nil {
		return nil, fmt.Errorf("tenant access in the seed: %w", err)
	}
	return deleted, nil
}

// markEnrolled sets or removes tenant.EnrolledLabel on t's Cluster (a merge patch of the label
// alone: gardenlet owns the rest of the Cluster and keeps labels it did not set).
func markEnrolled(ctx context.Context, seed client.Client, t tenant.Name, enrolled bool) error {
	var value any // JSON null removes the label
	if enrolled {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{tenant.EnrolledLabel: value}}})
	if err != nil {
		return err
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion(clients.ClusterGroup + "/v1alpha1")
	cluster.SetKind("Cluster")
	cluster.SetName(string(t))
	if err := seed.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("labelling the Cluster %s: %w", t, err)
	}
	return nil
}
