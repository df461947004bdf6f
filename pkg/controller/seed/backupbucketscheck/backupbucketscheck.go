// Package backupbucketscheck is the "Backup Buckets Check" reconciler of GCM's Seed controller:
// it keeps a Seed's BackupBucketsReady condition in line with the BackupBuckets of the seed
// (.spec.seedName): False while one of them has a .status.lastError (after the configured
// threshold, Progressing before), Unknown when the seed has none, True otherwise.
package backupbucketscheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/internal/seedcheck"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler (and its sweep) in the seed function.
const ReconcilerName = "backupbuckets-check"

// Gardener's reasons and messages of the BackupBucketsReady condition.
const (
	ReasonError     = "BackupBucketsError"
	ReasonGone      = "BackupBucketsGone"
	ReasonAvailable = "BackupBucketsAvailable"

	MessageGone      = "Backup Buckets are gone."
	MessageAvailable = "Backup Buckets are available."
)

// Condition computes a seed's BackupBucketsReady condition from its current one (nil when it has
// none) and the seed's BackupBuckets: a bucket with a last error fails the check (Progressing
// while threshold has not passed since the condition left True), no bucket at all makes it
// Unknown (through Progressing as well), and otherwise it is True.
func Condition(now time.Time, threshold time.Duration, current *gardencorev1beta1.Condition, buckets []gardencorev1beta1.BackupBucket) gardencorev1beta1.Condition {
	condition := function.InitCondition(now, gardencorev1beta1.SeedBackupBucketsReady)
	if current != nil {
		condition = *current
	}
	var erroneous []string
	for _, b := range buckets {
		if b.Status.LastError != nil {
			erroneous = append(erroneous, fmt.Sprintf("Name: %s, Error: %s", b.Name, b.Status.LastError.Description))
		}
	}
	switch {
	case len(erroneous) > 0:
		return function.ProgressingOrFalseCondition(now, threshold, condition, ReasonError, "The following BackupBuckets have issues:\n* "+strings.Join(erroneous, "\n* "))
	case len(buckets) == 0:
		return function.ProgressingOrUnknownCondition(now, threshold, condition, ReasonGone, MessageGone)
	}
	return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionTrue, ReasonAvailable, MessageAvailable)
}

// Reconciler sets the BackupBucketsReady condition of the Seed a key names.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	// Threshold is how long the condition stays Progressing before it turns False or Unknown;
	// zero turns it at once.
	Threshold time.Duration
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the seed and its BackupBuckets (by the field selector spec.seedName) and
// patches the condition if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	return seedcheck.Reconcile(ctx, req, r.Writer, gardencorev1beta1.SeedBackupBucketsReady, &gardencorev1beta1.BackupBucketList{}, core.BackupBucketSeedName,
		func(current *gardencorev1beta1.Condition, buckets *gardencorev1beta1.BackupBucketList) gardencorev1beta1.Condition {
			return Condition(r.Clock.Now(), r.Threshold, current, buckets.Items)
		})
}

// Watches feed the reconciler with BackupBuckets, as Gardener's: the creation and updates of a
// bucket that names a seed enqueue that seed. Knative's update events carry only the new
// object, so every update of such a bucket passes (Gardener compares the last error of the old
// and new object); a reconcile that finds nothing changed writes nothing. Deletions are left to
// the sweep, as Gardener leaves them to its periodic requeue.
func Watches(reconciler string) []function.Watch {
	return []function.Watch{{Kind: kinds.BackupBucket, Reconciler: reconciler, Predicate: BackupBucketPredicate, Map: MapBackupBucketToSeed}}
}

// BackupBucketPredicate passes the creation and updates of BackupBuckets that name a seed.
func BackupBucketPredicate(ev function.Event) bool {
	return !ev.Deleted && ev.Object != nil && bucketSeed(ev.Object) != ""
}

// MapBackupBucketToSeed maps a BackupBucket to its seed, from the event alone.
func MapBackupBucketToSeed(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: bucketSeed(ev.Object)}}, nil
}

func bucketSeed(obj *unstructured.Unstructured) string {
	seed, _, _ := unstructured.NestedString(obj.Object, "spec", "seedName")
	return seed
}

// Sweep re-checks every seed every 30 s (Gardener's default syncPeriod of the controller): it
// notices deleted buckets and the expiry of the threshold, which no event announces. It costs
// one LIST of Seeds and one of BackupBuckets, indexed by seed.
func Sweep(reconciler string) function.Sweep {
	return seedcheck.Sweep(reconciler, kinds.BackupBucket, core.BackupBucketSeedName, func(obj client.Object) []string {
		return []string{ptr.Deref(obj.(*gardencorev1beta1.BackupBucket).Spec.SeedName, "")}
	})
}

// RBAC is what the reconciler does: read Seeds and BackupBuckets, patch the Seeds' status.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"backupbuckets"}, Verbs: []string{"list"}},
}
