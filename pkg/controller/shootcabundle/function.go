// Package shootcabundle keeps the CA bundle of the webhook registrations that the enrolment
// (pkg/enrolment) applied to each shoot of the seed: a shoot's kube-apiserver runs in the seed and
// calls the seed's webhook servers straight at their TLS Service
// (https://grm-webhooks-tls.gardener-knative.svc/<tenant>/...), so each of its registrations must
// trust the CAs that webhookcertificates issues for that Service, through every rotation. Gardener
// needs no such controller: there each shoot's own resource manager writes its registrations with
// its own CA when it starts.
//
// One reconcile per enrolled tenant (its Cluster): it sets the caBundle of every webhook of the
// shoot's registrations whose url names a serving certificate's Service to that certificate's
// bundle (ca.crt of its Secret) and the proof in every tenant url to the one the seed's signing
// key makes (pkg/tenantproof; it rotates the keys, a new one every TENANT_PROOF_ROTATION, as the
// reconciles of every tenant read them), then records on the Cluster which bundle the shoot carries
// (webhookcertificates.AnnotationTenantBundle), which a rotation waits for before it serves the
// new certificate. A change of a serving certificate's Secret reaches every tenant; a sweep every
// minute catches the rest (a tenant's shoot unreachable for a while, one woken from hibernation).
package shootcabundle

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Function keeps the shoots' registrations trusting the seed's webhook servers.
var Function = &function.Function{
	Name:       "shootcabundle",
	Parts:      []function.Part{function.Seed},
	Deployment: function.PerSeed,
	Config:     &Config{},
	RBAC: []rbacv1.PolicyRule{
		// The tenants, and what each one's Cluster records of its shoot.
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list", "patch"}},
	},
	// Each tenant's access Secrets, in enrolled tenants' namespaces only.
	TenantRBAC: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	// The serving certificates' bundles, and the tenant proof keys it makes and rotates.
	NamespacedRBAC: map[string][]rbacv1.PolicyRule{
		sources.Namespace: {
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"patch"}, ResourceNames: []string{tenantproof.SecretName}},
		},
	},
	Reconcilers: []function.Reconciler{{Name: "main", For: kinds.ExtensionsCluster, New: newReconciler}},
	Watches: []function.Watch{
		// A serving certificate was issued or its bundle changed: every tenant. (A change of the
		// ingress's CA, an operator's input, comes with the next sweep.)
		// Secrets are watched by reference: their events carry no labels, so the predicate
		// keeps those of our namespace (webhookcertificates' watch, shared in the source).
		{Kind: kinds.Secret, Reconciler: "main", LabelSelector: webhookcertificates.LabelServingCertificate, Predicate: inOurNamespace, Map: mapToTenants},
	},
	Sweeps: []function.Sweep{{
		Name: "resync", Schedule: "* * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.ExtensionsCluster, LabelSelector: tenant.EnrolledLabel + "=true", MetadataOnly: true},
		// The few Secrets of our namespace: the serving certificates and the ingress's CA.
		Related: []function.List{{Kind: kinds.Secret, Namespace: sources.Namespace}},
	}},
}

// Config is how often the tenant proof keys rotate.
type Config struct {
	// ProofRotation is how often a new key signs the tenants' proofs; a key is accepted for two
	// rotations (pkg/tenantproof).
	ProofRotation time.Duration `envconfig:"TENANT_PROOF_ROTATION" default:"720h"`
}

func inOurNamespace(ev function.Event) bool { return ev.Key.Namespace == sources.Namespace }

// mapToTenants maps a serving certificate's event to every enrolled tenant (one metadata LIST).
func mapToTenants(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	tenants, err := clients.Discover(ctx, reader, "", 0)
	if err != nil {
		return nil, err
	}
	keys := make([]function.Key, 0, len(tenants))
	for _, tn := range tenants {
		keys = append(keys, function.Key{Name: string(tn)})
	}
	return keys, nil
}

// Reconciler brings one tenant's registrations in line with the serving certificates.
type Reconciler struct {
	Source, Target function.ClusterClient
	Clock          clock.PassiveClock
	Config         *Config
	Log            *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Source: deps.Source, Target: deps.Target, Clock: deps.Clock, Config: deps.Config.(*Config), Log: deps.Log}, nil
}

// Reconcile sets the bundles of the tenant's registrations and records them on its Cluster. The
// runtime has made sure the tenant is enrolled and reachable from the seed.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	cluster := &metav1.PartialObjectMetadata{}
	cluster.SetGroupVersionKind(kinds.ExtensionsCluster.GroupVersionKind)
	if err := req.Reader.Get(ctx, req.Key, cluster); err != nil {
		return err
	}
	secrets := &corev1.SecretList{}
	if err := req.Reader.List(ctx, secrets, client.InNamespace(sources.Namespace)); err != nil {
		return fmt.Errorf("listing the servers' certificates: %w", err)
	}
	bundles := webhookcertificates.BundlesOf(sources.Namespace, secrets.Items)
	signing, err := r.rotateKeys(ctx, secrets.Items)
	if err != nil {
		return err
	}
	settings, _ := tenant.SettingsFrom(ctx)
	hibernated := settings != nil && settings.Hibernated
	if !hibernated {
		if err := r.inject(ctx, req, bundles, signing); err != nil {
			return err
		}
	}
	records := Records(bundles.Certificates, hibernated)
	_, err = r.Source.Writer.Patch(ctx, cluster, func() {
		for key, value := range records {
			metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, key, value)
		}
	})
	return err
}

// rotateKeys makes the tenant proof keys when there are none, rotates them when due (a write
// conditional on the Secret read: of the reconciles of many tenants at once, one writes and the
// others read again), and returns the signing key.
func (r *Reconciler) rotateKeys(ctx context.Context, secrets []corev1.Secret) (tenantproof.Key, error) {
	now := r.Clock.Now()
	i := slices.IndexFunc(secrets, func(s corev1.Secret) bool { return s.Name == tenantproof.SecretName })
	if i < 0 {
		keys, _, err := tenantproof.Rotate(nil, now, r.Config.ProofRotation)
		if err != nil {
			return tenantproof.Key{}, err
		}
		if err := r.Source.Writer.Create(ctx, tenantproof.Secret(sources.Namespace, keys)); err != nil {
			return tenantproof.Key{}, fmt.Errorf("making the tenant proof keys: %w", err)
		}
		r.Log.Info("tenant proof keys made", "key", keys[0].ID())
		signing, _ := keys.Signing(now)
		return signing, nil
	}
	secret := &secrets[i]
	keys, err := tenantproof.FromSecret(secret)
	if err != nil {
		return tenantproof.Key{}, function.Terminal(err)
	}
	rotated, changed, err := tenantproof.Rotate(keys, now, r.Config.ProofRotation)
	if err != nil {
		return tenantproof.Key{}, err
	}
	if changed {
		if _, err := r.Source.Writer.Patch(ctx, secret, func() { secret.Data = rotated.Data() }); err != nil {
			return tenantproof.Key{}, fmt.Errorf("rotating the tenant proof keys: %w", err)
		}
		r.Log.Info("tenant proof keys rotated", "newest", rotated[0].ID(), "keys", len(rotated))
	}
	signing, _ := rotated.Signing(now)
	return signing, nil
}

// inject sets the caBundles and tenant proofs of the shoot's registrations (two LISTs in the
// shoot, a PATCH for each registration that changes: the Writer sends none for a registration
// that stays).
func (r *Reconciler) inject(ctx context.Context, req function.Request, bundles webhookcertificates.Bundles, signing tenantproof.Key) error {
	t := tenant.From(ctx)
	lists := []client.ObjectList{&admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}}
	for _, list := range lists {
		if err := req.Target.List(ctx, list, client.MatchingLabels(tenant.RegistrationLabels)); err != nil {
			return fmt.Errorf("listing the shoot's registrations: %w", err)
		}
		for _, obj := range webhookcertificates.Registrations(list) {
			configs := webhookcertificates.ClientConfigs(obj)
			patched, err := r.Target.Writer.Patch(ctx, obj, func() {
				bundles.Inject(configs)
				for _, cc := range configs {
					if cc.URL == nil {
						continue
					}
					// A url that addresses no tenant is not ours to sign.
					if u, err := tenantproof.URL(*cc.URL, t, signing, ""); err == nil {
						cc.URL = &u
					}
				}
			})
			if err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
			if patched {
				r.Log.Info("CA bundle and tenant proof injected into the shoot's registration", "tenant", t, "registration", obj.GetName(), "key", signing.ID())
			}
		}
	}
	return nil
}

// Records are the annotations of a tenant's Cluster once its registrations carry the
// certificates' bundles (or it is hibernated: nothing of it was read).
func Records(certificates []webhookcertificates.Certificate, hibernated bool) map[string]string {
	records := map[string]string{}
	for _, c := range certificates {
		record := webhookcertificates.Digest(c.Bundle)
		if hibernated {
			record = webhookcertificates.TenantHibernated
		}
		records[webhookcertificates.AnnotationTenantBundle(c.Secret)] = record
	}
	return records
}
