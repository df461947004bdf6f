// Package secrets is the "Main" reconciler of GCM's Seed controller: it gives every Seed its
// namespace seed-<name> in the garden and keeps in it a copy of each of the garden namespace's
// shared Secrets (labelled gardener.cloud/role, except the roles Gardener never shares), so that
// a gardenlet, which may only read its seed's namespace, finds them. Copies are created,
// updated and deleted with their originals.
package secrets

import (
	"context"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler in the seed function.
const ReconcilerName = "main"

// ResyncSweepName names its sweep.
const ResyncSweepName = "resync"

// NamespacePrefix starts the name of a seed's namespace in the garden.
const NamespacePrefix = "seed-"

// NamespaceName is the name of the seed's namespace in the garden.
func NamespaceName(seed string) string { return NamespacePrefix + seed }

// roleResourceReference is the role of Secrets that copies of referenced resources carry
// (Gardener's GardenRoleResourceReference, newer than the pinned API constants).
const roleResourceReference = "resource-reference"

// notShared are the roles of garden Secrets that are never copied: control plane secrets (the
// kubeconfig, SSH key pair and monitoring credentials of shoots), pull secrets and CA bundles
// for extension charts, and copies of referenced resources.
var notShared = append(append([]string{}, v1beta1constants.ControlPlaneSecretRoles...),
	v1beta1constants.GardenRoleHelmPullSecret, v1beta1constants.GardenRoleOCICABundle, roleResourceReference)

// Selector selects the shared Secrets: those with a gardener.cloud/role label of a shared role.
var Selector = func() labels.Selector {
	has, err := labels.NewRequirement(v1beta1constants.GardenRole, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	shared, err := labels.NewRequirement(v1beta1constants.GardenRole, selection.NotIn, notShared)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*has, *shared)
}()

// Reconciler converges the namespace of the Seed a key names and the copies in it.
type Reconciler struct {
	Writer function.Writer
	// Live reads the API server where the sweep's snapshot cannot know the answer: a copy that
	// lost its role label is outside the sweep's list.
	Live client.Reader
	Log  *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile creates the seed's namespace (or labels the one the seed controls), then copies the
// shared garden Secrets into it and deletes the copies whose original is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	seed := &metav1.PartialObjectMetadata{}
	seed.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("Seed"))
	if err := req.Reader.Get(ctx, req.Key, seed); err != nil {
		return client.IgnoreNotFound(err)
	}
	namespace := NamespaceName(seed.Name)
	if err := r.reconcileNamespace(ctx, req.Reader, seed, namespace); err != nil {
		return err
	}

	originals := &corev1.SecretList{}
	if err := req.Reader.List(ctx, originals, client.InNamespace(v1beta1constants.GardenNamespace), client.MatchingLabelsSelector{Selector: Selector}); err != nil {
		return err
	}
	copies := &corev1.SecretList{}
	if err := req.Reader.List(ctx, copies, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: Selector}); err != nil {
		return err
	}
	existing := map[string]*corev1.Secret{}
	for i := range copies.Items {
		existing[copies.Items[i].Name] = &copies.Items[i]
	}
	for i := range originals.Items {
		original := &originals.Items[i]
		if err := r.syncCopy(ctx, original, existing[original.Name], namespace); err != nil {
			return fmt.Errorf("copying secret %s to namespace %s: %w", original.Name, namespace, err)
		}
		delete(existing, original.Name)
	}
	for _, stale := range existing {
		r.Log.Info("Deleting copy of a garden secret that is gone", "seed", seed.Name, "secret", client.ObjectKeyFromObject(stale))
		if err := r.Writer.Delete(ctx, stale); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// reconcileNamespace creates the seed's namespace, controlled by the seed, or makes sure the
// existing one is the seed's and carries the seed role. A namespace of that name that the seed
// does not control is left alone: the reconcile fails terminally (as Gardener's keeps failing),
// and the sweep looks again.
func (r *Reconciler) reconcileNamespace(ctx context.Context, reader client.Reader, seed *metav1.PartialObjectMetadata, name string) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		r.Log.Info("Creating Namespace in garden for Seed", "seed", seed.Name, "namespace", name)
		return r.Writer.Create(ctx, NewNamespace(seed, name))
	}
	if !metav1.IsControlledBy(ns, seed) {
		return function.Terminal(fmt.Errorf("namespace %q is not controlled by seed %q", name, seed.Name))
	}
	_, err := r.Writer.Patch(ctx, ns, func() {
		metav1.SetMetaDataLabel(&ns.ObjectMeta, v1beta1constants.GardenRole, v1beta1constants.GardenRoleSeed)
	})
	return err
}

// NewNamespace is the seed's namespace as Gardener creates it: labelled with the seed role and
// controlled by the seed, so that it goes when the seed goes.
func NewNamespace(seed metav1.Object, name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:            name,
		Labels:          map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleSeed},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(seed, gardencorev1beta1.SchemeGroupVersion.WithKind("Seed"))},
	}}
}

// ApplyOriginal makes dst, a copy, carry what Gardener copies of the original: labels, annotations,
// type and data, exactly.
func ApplyOriginal(dst, original *corev1.Secret) {
	dst.Labels = original.Labels
	dst.Annotations = original.Annotations
	dst.Type = original.Type
	dst.Data = original.Data
}

// syncCopy creates or corrects the copy of original in namespace; current is the copy as read,
// nil when the selected list has none.
func (r *Reconciler) syncCopy(ctx context.Context, original, current *corev1.Secret, namespace string) error {
	if current == nil {
		fresh := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: original.Name, Namespace: namespace}}
		ApplyOriginal(fresh, original)
		err := r.Writer.Create(ctx, fresh)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		// A secret of that name without a shared role: the selected lists cannot see it.
		current = &corev1.Secret{}
		if err := r.Live.Get(ctx, client.ObjectKey{Namespace: namespace, Name: original.Name}, current); err != nil {
			return err
		}
	}
	_, err := r.Writer.Patch(ctx, current, func() { ApplyOriginal(current, original) })
	return err
}

// Watches feed the reconciler as Gardener's: the creation of a Seed, and every change of a
// shared garden Secret, which concerns every seed. Secrets are confidential: their events name
// the Secret without content, so the source's watch is narrowed to shared Secrets by label on
// the server, and the predicate keeps those of the garden namespace.
var Watches = []function.Watch{
	{Kind: kinds.Seed, Reconciler: ReconcilerName, Predicate: SeedPredicate},
	{Kind: kinds.Secret, Reconciler: ReconcilerName, LabelSelector: Selector.String(), Predicate: GardenSecretPredicate, Map: MapGardenSecretToSeeds},
}

// SeedPredicate passes the creation of a Seed: later events change nothing this reconciler
// decides on.
func SeedPredicate(ev function.Event) bool { return ev.Created }

// GardenSecretPredicate passes events of Secrets in the garden namespace.
func GardenSecretPredicate(ev function.Event) bool {
	return ev.Key.Namespace == v1beta1constants.GardenNamespace
}

// MapGardenSecretToSeeds maps an event of a shared garden Secret to every Seed, with one
// metadata-only LIST. The function's Trigger also brings the events of the other functions'
// Secret watches (the source watches Secrets once per selector), and a Reference-mode event
// shows no labels: so an event other than a deletion is first checked against the Secret's
// labels (one metadata-only GET). A deletion always passes: the label-narrowed watch also
// reports a Secret that lost its shared role as deleted, and then its copies must go.
func MapGardenSecretToSeeds(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	if !ev.Deleted {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := reader.Get(ctx, ev.Key, secret); client.IgnoreNotFound(err) != nil {
			return nil, err
		} else if err == nil && !Selector.Matches(labels.Set(secret.Labels)) {
			return nil, nil
		}
	}
	seeds := &metav1.PartialObjectMetadataList{}
	seeds.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("SeedList"))
	if err := reader.List(ctx, seeds); err != nil {
		return nil, err
	}
	keys := make([]function.Key, 0, len(seeds.Items))
	for _, s := range seeds.Items {
		keys = append(keys, function.Key{Name: s.Name})
	}
	return keys, nil
}

// Sweeps is the resync sweep: every seed against one LIST of the seed namespaces and one of the
// shared Secrets of all namespaces (the originals in the garden namespace and the copies in the
// seeds'), so that missed events, deleted namespaces and changed copies are caught up with.
var Sweeps = []function.Sweep{{
	Name: ResyncSweepName, Schedule: "*/10 * * * *", Reconciler: ReconcilerName,
	Primary: function.List{Kind: kinds.Seed, MetadataOnly: true},
	Related: []function.List{
		{Kind: kinds.Namespace, MetadataOnly: true, LabelSelector: v1beta1constants.GardenRole + "=" + v1beta1constants.GardenRoleSeed},
		{Kind: kinds.Secret, LabelSelector: Selector.String()},
	},
}}

// RBAC is what the reconciler does on the garden cluster.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds"}, Verbs: []string{"get", "list"}},
	// The namespace blocks its seed's deletion (blockOwnerDeletion): where the
	// OwnerReferencesPermissionEnforcement admission plugin runs, that takes the right to update
	// the seed's finalizers.
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "create", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
}
