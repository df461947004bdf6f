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
// bundle (ca.crt of its Secret), then records on the Cluster which bundle the shoot carries
// (webhookcertificates.AnnotationTenantBundle), which a rotation waits for before it serves the
// new certificate. A change of a serving certificate's Secret reaches every tenant; a sweep every
// minute catches the rest (a tenant's shoot unreachable for a while, one woken from hibernation).
package shootcabundle

import (
	"context"
	"fmt"
	"log/slog"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Function keeps the shoots' registrations trusting the seed's webhook servers.
var Function = &function.Function{
	Name:       "shootcabundle",
	Parts:      []function.Part{function.Seed},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// Each tenant's access Secrets in its namespace.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		// The tenants, and what each one's Cluster records of its shoot.
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list", "patch"}},
	},
	// The serving certificates' bundles.
	NamespacedRBAC: map[string][]rbacv1.PolicyRule{
		sources.Namespace: {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}},
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
	Log            *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Source: deps.Source, Target: deps.Target, Log: deps.Log}, nil
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
	settings, _ := tenant.SettingsFrom(ctx)
	hibernated := settings != nil && settings.Hibernated
	if !hibernated {
		if err := r.inject(ctx, req, bundles); err != nil {
			return err
		}
	}
	records := Records(bundles.Certificates, hibernated)
	_, err := r.Source.Writer.Patch(ctx, cluster, func() {
		for key, value := range records {
			metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, key, value)
		}
	})
	return err
}

// inject sets the caBundles of the shoot's registrations (two LISTs in the shoot, a PATCH for
// each registration that changes: the Writer sends none for a registration that stays).
func (r *Reconciler) inject(ctx context.Context, req function.Request, bundles webhookcertificates.Bundles) error {
	lists := []client.ObjectList{&admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}}
	for _, list := range lists {
		if err := req.Target.List(ctx, list, client.MatchingLabels(tenant.RegistrationLabels)); err != nil {
			return fmt.Errorf("listing the shoot's registrations: %w", err)
		}
		for _, obj := range webhookcertificates.Registrations(list) {
			patched, err := r.Target.Writer.Patch(ctx, obj, func() { bundles.Inject(webhookcertificates.ClientConfigs(obj)) })
			if err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
			if patched {
				r.Log.Info("CA bundle injected into the shoot's registration", "tenant", tenant.From(ctx), "registration", obj.GetName())
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
