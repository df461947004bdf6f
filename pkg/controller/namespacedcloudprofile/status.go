package namespacedcloudprofile

import (
	"context"
	"encoding/json"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// StatusReconciler writes a NamespacedCloudProfile's status: MergedSpec of it and its parent,
// and the generation that was merged.
type StatusReconciler struct {
	Writer function.Writer
	Log    *slog.Logger
	// OnlyIfStale restricts writes to statuses that StatusStale finds stale. The sweep's
	// reconciler sets it; the event reconciler writes whatever differs, as Gardener does.
	OnlyIfStale bool
}

var _ function.Handler = &StatusReconciler{}

// Reconcile merges the NamespacedCloudProfile with its parent and patches the status. A
// profile being deleted keeps its status; one whose parent does not exist (yet) is left alone
// until the parent's event comes.
func (r *StatusReconciler) Reconcile(ctx context.Context, req function.Request) error {
	profile := &gardencorev1beta1.NamespacedCloudProfile{}
	if err := req.Reader.Get(ctx, req.Key, profile); err != nil {
		return client.IgnoreNotFound(err)
	}
	if profile.DeletionTimestamp != nil {
		return nil
	}
	parent := &gardencorev1beta1.CloudProfile{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: profile.Spec.Parent.Name}, parent); err != nil {
		if apierrors.IsNotFound(err) {
			r.Log.Info("Parent CloudProfile not found, status left as it is", "namespacedCloudProfile", req.Key, "parent", profile.Spec.Parent.Name)
			return nil
		}
		return err
	}
	merged := MergedSpec(profile, parent)
	if r.OnlyIfStale {
		stale, err := StatusStale(profile, merged)
		if err != nil || !stale {
			return err
		}
	}
	changed, err := r.Writer.PatchStatus(ctx, profile, func() {
		profile.Status.CloudProfileSpec = merged
		profile.Status.ObservedGeneration = profile.Generation
	})
	if changed {
		r.Log.Info("Updated status", "namespacedCloudProfile", req.Key, "generation", profile.Generation)
	}
	return client.IgnoreNotFound(err)
}

// StatusStale says whether the profile's status no longer shows merged (the MergedSpec of it
// and its parent now): its generation is not the one observed, or the status differs from
// merged. The providerConfig is compared only where the profile has none of its own: provider
// extensions merge a namespaced providerConfig into the status by their webhook, so there the
// status never equals the parent's and a comparison would rewrite it on every sweep. A change
// of only the parent's providerConfig therefore reaches such profiles through the parent's
// event, not through the sweep.
func StatusStale(profile *gardencorev1beta1.NamespacedCloudProfile, merged gardencorev1beta1.CloudProfileSpec) (bool, error) {
	if profile.Status.ObservedGeneration != profile.Generation {
		return true, nil
	}
	current := profile.Status.CloudProfileSpec
	if profile.Spec.ProviderConfig != nil {
		current.ProviderConfig, merged.ProviderConfig = nil, nil
	}
	// JSON is what the API stores: nil and empty lists, or differently built quantities, that
	// serialize alike are alike.
	a, err := json.Marshal(current)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return false, err
	}
	return string(a) != string(b), nil
}

// MapCloudProfileToNamespacedCloudProfiles maps a CloudProfile's event to the
// NamespacedCloudProfiles whose parent it is. gardener-apiserver offers no field selector for a
// NamespacedCloudProfile's parent, so all of them are listed (paginated) and filtered.
func MapCloudProfileToNamespacedCloudProfiles(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	items, err := kube.ListAll(ctx, reader, &gardencorev1beta1.NamespacedCloudProfileList{}, 500)
	if err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, item := range items {
		if item.(*gardencorev1beta1.NamespacedCloudProfile).Spec.Parent.Name == ev.Key.Name {
			keys = append(keys, client.ObjectKeyFromObject(item))
		}
	}
	return keys, nil
}
