package webhookcertificates

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// The shoots' registrations of a Service are not this function's: they live in each shoot, and
// the per-seed function shootcabundle keeps their caBundle. It records on each enrolled tenant's
// Cluster which bundle of a serving certificate every registration of that shoot carries
// (AnnotationTenantBundle), and a rotation waits for every tenant as it waits for the seed's own
// registrations.

// AnnotationTenantBundle is the annotation of a tenant's Cluster that says which bundle of the
// serving certificate in the Secret secret (of our namespace) the shoot's registrations carry:
// its Digest, or TenantHibernated.
func AnnotationTenantBundle(secret string) string {
	return "gardener-knative.io/ca-bundle-" + secret
}

// TenantHibernated is the record of a hibernated tenant: its kube-apiserver calls no webhook, so
// it holds no rotation up; shootcabundle brings its registrations in line when it wakes up.
const TenantHibernated = "hibernated"

// Digest is what a tenant's record says of a bundle.
func Digest(bundle []byte) string {
	sum := sha256.Sum256(bundle)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TenantTrusts says whether a tenant's record of the Secret's bundle lets a rotation go on.
func TenantTrusts(record string, bundle []byte) bool {
	return record == TenantHibernated || record == Digest(bundle)
}

// untrustingTenant is an enrolled tenant whose record says its registrations do not carry the
// Secret's current bundle yet ("" when none: a metadata LIST of the seed's Clusters, only while
// a certificate is pending). A cluster that serves no Clusters has no tenants.
func (r *Reconciler) untrustingTenant(ctx context.Context, key client.ObjectKey, bundle []byte) (tenant.Name, error) {
	clusters := &metav1.PartialObjectMetadataList{}
	clusters.SetGroupVersionKind(kinds.ExtensionsCluster.GroupVersion().WithKind(kinds.ExtensionsCluster.Kind + "List"))
	if err := r.Source.Reader.List(ctx, clusters, client.MatchingLabels{tenant.EnrolledLabel: "true"}); err != nil {
		if meta.IsNoMatchError(err) {
			return "", nil
		}
		return "", fmt.Errorf("listing the tenants: %w", err)
	}
	for _, c := range clusters.Items {
		if !TenantTrusts(c.Annotations[AnnotationTenantBundle(key.Name)], bundle) {
			return tenant.Name(c.Name), nil
		}
	}
	return "", nil
}

// The garden's registrations of a runtime part's Service (extension-registration's of
// ControllerRegistrations and ControllerDeployments) are not this function's either: they live in
// the garden, which the runtime part's gardencabundle works on. It records on the Service's Secret
// which bundle every garden registration naming the Secret carries (AnnotationGardenBundle), and
// a rotation waits for it as for a tenant.

// AnnotationGardenBundle is the annotation of a serving certificate's Secret that says which
// bundle the garden's registrations naming it carry (its Digest). Absent, no garden registration
// names the Secret; gardencabundle removes it when the last one goes.
const AnnotationGardenBundle = "gardener-knative.io/ca-bundle-garden"

// GardenTrusts says whether the garden's record on secret lets a rotation to bundle go on. With no
// record there is nothing in the garden to wait for. (Before gardencabundle's first reconcile of a
// garden registration there is no record either, but then the registration carries no bundle at
// all, so no promotion can take a trust away from it.)
func GardenTrusts(secret *corev1.Secret, bundle []byte) bool {
	record, ok := secret.Annotations[AnnotationGardenBundle]
	return !ok || record == Digest(bundle)
}

// IngressCA is the Secret of the servers' namespace in which the operator provides the CA of
// Knative's cluster-local TLS (ca.crt): what a registration that reaches a Knative Service through
// the ingress trusts (the shoots' best-effort webhooks, the scale-to-zero variant).
const IngressCA = "knative-ingress-ca"

// Certificate is a serving certificate's bundle and the hosts its Service is called at.
type Certificate struct {
	Secret string
	Hosts  []string
	Bundle []byte
}

// Bundles are what the registrations of the servers of one namespace trust, by the host of their
// url: a serving certificate's Service its bundle, another host of the namespace (a Knative
// Service, through the ingress) the ingress's CA.
type Bundles struct {
	Namespace    string
	Certificates []Certificate
	// Ingress is IngressCA's ca.crt; nil where the operator has not provided it.
	Ingress []byte
}

// BundlesOf reads the Bundles of namespace from its Secrets: the serving certificates issued here
// (LabelServingCertificate, with a bundle) and IngressCA.
func BundlesOf(namespace string, secrets []corev1.Secret) Bundles {
	t := Bundles{Namespace: namespace}
	for _, s := range secrets {
		bundle := s.Data[KeyBundle]
		if s.Namespace != namespace || len(ParseBundle(bundle)) == 0 {
			continue
		}
		switch {
		case s.Labels[LabelServingCertificate] == "true":
			svc := s.Name + "." + s.Namespace + ".svc"
			t.Certificates = append(t.Certificates, Certificate{Secret: s.Name, Hosts: []string{svc, svc + ".cluster.local"}, Bundle: bundle})
		case s.Name == IngressCA:
			t.Ingress = bundle
		}
	}
	return t
}

// BundleFor is the bundle a url at host trusts; nil for hosts of other namespaces, and where
// nothing is known.
func (t Bundles) BundleFor(host string) []byte {
	for _, c := range t.Certificates {
		if slices.Contains(c.Hosts, host) {
			return c.Bundle
		}
	}
	if strings.HasSuffix(host, "."+t.Namespace+".svc") || strings.HasSuffix(host, "."+t.Namespace+".svc.cluster.local") {
		return t.Ingress
	}
	return nil
}

// Inject sets the caBundle of every webhook whose url's host has a bundle (BundleFor) to it; it
// says whether anything changed. Other webhooks keep theirs.
func (t Bundles) Inject(configs []*admissionregistrationv1.WebhookClientConfig) bool {
	changed := false
	for _, cc := range configs {
		if cc.URL == nil {
			continue
		}
		u, err := url.Parse(*cc.URL)
		if err != nil {
			continue
		}
		if bundle := t.BundleFor(u.Hostname()); bundle != nil && !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, changed = bundle, true
		}
	}
	return changed
}

// ClientConfigs are the client configurations of a registration's webhooks (a Mutating- or
// ValidatingWebhookConfiguration), to read and change in place.
func ClientConfigs(obj client.Object) []*admissionregistrationv1.WebhookClientConfig {
	var configs []*admissionregistrationv1.WebhookClientConfig
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			configs = append(configs, &o.Webhooks[i].ClientConfig)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			configs = append(configs, &o.Webhooks[i].ClientConfig)
		}
	}
	return configs
}

// Registrations are the items of a Mutating- or ValidatingWebhookConfigurationList, to read and
// change in place.
func Registrations(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *admissionregistrationv1.MutatingWebhookConfigurationList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *admissionregistrationv1.ValidatingWebhookConfigurationList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}
