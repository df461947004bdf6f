package managedseedset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/apis/seedmanagement/encoding"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Finalizer is the finalizer the controller keeps on a set until its replicas are gone.
const Finalizer = gardencorev1beta1.GardenerName

// errSetChanged means the set changed between the read a decision rests on and its action.
var errSetChanged = errors.New("the set changed since it was read")

// Reconciler reads a set and its replicas, makes the one write Decide plans, records its Event
// and the set's status.
type Reconciler struct {
	Writer          function.Writer
	Events          function.EventRecorder
	Clock           clock.PassiveClock
	MaxShootRetries int
	Log             *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile converges one ManagedSeedSet.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	set := &seedmanagementv1alpha1.ManagedSeedSet{}
	if err := req.Reader.Get(ctx, req.Key, set); err != nil {
		return client.IgnoreNotFound(err)
	}
	deleting := set.DeletionTimestamp != nil
	if deleting && !slices.Contains(set.Finalizers, Finalizer) {
		return nil
	}
	if !deleting {
		if _, err := r.Writer.Patch(ctx, set, func() {
			if !slices.Contains(set.Finalizers, Finalizer) {
				set.Finalizers = append(set.Finalizers, Finalizer)
			}
		}); err != nil {
			return fmt.Errorf("adding finalizer: %w", err)
		}
	}

	plan, err := r.converge(ctx, req.Reader, set)
	if errors.Is(err, errSetChanged) || errors.Is(err, ErrCreateInFlight) {
		// Another reconcile was first, or is acting: nothing was done, and the runtime decides
		// again on what is there then (a retry).
		return err
	}
	if err != nil {
		e := ReconcileErrorEvent(err)
		r.Events.Event(ctx, set, e.Type, e.Reason, e.Message)
	}
	if deleting && plan.Done && err == nil {
		_, err := r.Writer.Patch(ctx, set, func() {
			set.Finalizers = slices.DeleteFunc(set.Finalizers, func(f string) bool { return f == Finalizer })
		})
		return client.IgnoreNotFound(err)
	}
	if _, statusErr := r.Writer.PatchStatus(ctx, set, func() { set.Status = plan.Status }); statusErr != nil && err == nil {
		err = fmt.Errorf("updating status: %w", statusErr)
	}
	if errors.Is(err, ErrNoDeletableReplicas) {
		// Retrying at once cannot help: a Shoot has to leave a replica's Seed, or a protection
		// annotation has to go. The sweep looks again.
		return function.Terminal(err)
	}
	return err
}

// converge plans the reconcile and makes its write; the plan's status has the write's effect
// when it succeeded.
func (r *Reconciler) converge(ctx context.Context, reader client.Reader, set *seedmanagementv1alpha1.ManagedSeedSet) (Plan, error) {
	replicas, err := ReadReplicas(ctx, reader, set)
	if err != nil {
		status := set.Status.DeepCopy()
		status.ObservedGeneration = set.Generation
		return Plan{Status: *status}, fmt.Errorf("reading the replicas: %w", err)
	}
	if len(replicas) > TargetReplicas(set) {
		// Only scale-in asks which replicas are deletable, and only it needs to know whether
		// Shoots run on a replica's Seed: one LIST (limit 1) per replica with a Seed.
		if err := markScheduledShoots(ctx, reader, replicas); err != nil {
			status := set.Status.DeepCopy()
			status.ObservedGeneration = set.Generation
			return Plan{Status: *status}, fmt.Errorf("checking for Shoots on the replicas' Seeds: %w", err)
		}
	}

	plan := Decide(set, replicas, r.MaxShootRetries, r.Clock.Now())
	if plan.Action.Type != NoAction && plan.Err == nil {
		// The decision rests on the set's status as read, and a replica is created before the
		// status names it pending: a reconcile that read the set before another's status write
		// but the replicas after its create would take the new replica for a postponed one and
		// start the next. So the status the action leads to is written first, conditional on the
		// version decided on: of two reconciles on one version, one acts and the other meets a
		// conflict and decides again on what is now there. Should the action fail, the status
		// written at the end of the reconcile is the one before it, as in Gardener.
		claimed := plan.Status.DeepCopy()
		plan.Succeeded(claimed)
		if _, err := r.Writer.PatchStatus(ctx, set, func() { set.Status = *claimed }); err != nil {
			if apierrors.IsConflict(err) {
				err = fmt.Errorf("%w: %w", errSetChanged, err)
			}
			return plan, fmt.Errorf("recording the status of %s of replica %s before it: %w", plan.Action.Type, replicaName(set, plan.Action), err)
		}
	}
	if plan.Event != nil {
		r.Events.Event(ctx, set, plan.Event.Type, plan.Event.Reason, plan.Event.Message)
	}
	if plan.Err != nil {
		return plan, plan.Err
	}
	if plan.Action.Type == NoAction {
		return plan, nil
	}
	r.Log.Info("acting on replica", "managedSeedSet", client.ObjectKeyFromObject(set), "action", plan.Action.Type.String(), "replica", replicaName(set, plan.Action))
	if err := r.act(ctx, set, plan.Action); err != nil {
		return plan, fmt.Errorf("%s of replica %s: %w", plan.Action.Type, replicaName(set, plan.Action), err)
	}
	plan.Succeeded(&plan.Status)
	return plan, nil
}

func replicaName(set *seedmanagementv1alpha1.ManagedSeedSet, a Action) string {
	if a.Replica != nil {
		return a.Replica.Name()
	}
	return ReplicaName(set, a.Ordinal)
}

func (r *Reconciler) act(ctx context.Context, set *seedmanagementv1alpha1.ManagedSeedSet, a Action) error {
	switch a.Type {
	case CreateShoot:
		// A Shoot of that name that exists already (not matching the selector) becomes the
		// pending replica, as in Gardener.
		return client.IgnoreAlreadyExists(r.Writer.Create(ctx, NewShoot(set, a.Ordinal)))
	case CreateManagedSeed:
		ms, err := NewManagedSeed(set, a.Replica.Ordinal())
		if err != nil {
			return err
		}
		return client.IgnoreAlreadyExists(r.Writer.Create(ctx, ms))
	case DeleteManagedSeed:
		return client.IgnoreNotFound(r.Writer.Delete(ctx, a.Replica.ManagedSeed))
	case DeleteShoot:
		shoot := a.Replica.Shoot
		if _, err := r.Writer.Patch(ctx, shoot, func() { metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.ConfirmationDeletion, "true") }); err != nil {
			return client.IgnoreNotFound(err)
		}
		return client.IgnoreNotFound(r.Writer.Delete(ctx, shoot))
	case RetryShoot:
		shoot := a.Replica.Shoot
		_, err := r.Writer.Patch(ctx, shoot, func() {
			metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.ShootOperationRetry)
		})
		return err
	}
	return nil
}

// ReadReplicas reads the set's replicas: the Shoots in its namespace that match its selector,
// each with the ManagedSeed (same namespace, same selector) and Seed (same selector) of its name.
func ReadReplicas(ctx context.Context, reader client.Reader, set *seedmanagementv1alpha1.ManagedSeedSet) ([]*Replica, error) {
	selector, err := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if err != nil {
		return nil, function.Terminal(fmt.Errorf("spec.selector: %w", err))
	}
	shoots := &gardencorev1beta1.ShootList{}
	if err := reader.List(ctx, shoots, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	if len(shoots.Items) == 0 {
		return nil, nil
	}
	managedSeeds := &seedmanagementv1alpha1.ManagedSeedList{}
	if err := reader.List(ctx, managedSeeds, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	seeds := &gardencorev1beta1.SeedList{}
	if err := reader.List(ctx, seeds, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	managedSeedsByName := map[string]*seedmanagementv1alpha1.ManagedSeed{}
	for i := range managedSeeds.Items {
		managedSeedsByName[managedSeeds.Items[i].Name] = &managedSeeds.Items[i]
	}
	seedsByName := map[string]*gardencorev1beta1.Seed{}
	for i := range seeds.Items {
		seedsByName[seeds.Items[i].Name] = &seeds.Items[i]
	}
	replicas := make([]*Replica, 0, len(shoots.Items))
	for i := range shoots.Items {
		s := &shoots.Items[i]
		replicas = append(replicas, &Replica{Shoot: s, ManagedSeed: managedSeedsByName[s.Name], Seed: seedsByName[s.Name]})
	}
	return replicas, nil
}

// markScheduledShoots fills in HasScheduledShoots of the replicas that have a Seed.
func markScheduledShoots(ctx context.Context, reader client.Reader, replicas []*Replica) error {
	for _, r := range replicas {
		if r.Seed == nil {
			continue
		}
		scheduled := &metav1.PartialObjectMetadataList{}
		scheduled.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ShootList"))
		if err := reader.List(ctx, scheduled, client.MatchingFields{"spec.seedName": r.Seed.Name}, client.Limit(1)); err != nil {
			return err
		}
		r.HasScheduledShoots = len(scheduled.Items) > 0
	}
	return nil
}

// placeholder is what the shoot template's DNS domain may contain for the replica's name.
const placeholder = "replica-name"

// NewShoot is the Shoot of the set's replica numbered ordinal: the shoot template's labels,
// annotations and spec (the placeholder in spec.dns.domain replaced by the replica's name),
// controlled by the set.
func NewShoot(set *seedmanagementv1alpha1.ManagedSeedSet, ordinal int32) *gardencorev1beta1.Shoot {
	name := ReplicaName(set, ordinal)
	shoot := &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          set.Spec.ShootTemplate.Labels,
			Annotations:     set.Spec.ShootTemplate.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, seedmanagementv1alpha1.SchemeGroupVersion.WithKind("ManagedSeedSet"))},
		},
		Spec: *set.Spec.ShootTemplate.Spec.DeepCopy(),
	}
	if dns := shoot.Spec.DNS; dns != nil && dns.Domain != nil {
		domain := strings.ReplaceAll(*dns.Domain, placeholder, name)
		dns.Domain = &domain
	}
	return shoot
}

// NewManagedSeed is the ManagedSeed of the set's replica numbered ordinal: the template's labels,
// annotations and gardenlet configuration, on the replica's Shoot, controlled by the set. Like
// Gardener, it refuses a gardenlet configuration that does not decode.
func NewManagedSeed(set *seedmanagementv1alpha1.ManagedSeedSet, ordinal int32) (*seedmanagementv1alpha1.ManagedSeed, error) {
	name := ReplicaName(set, ordinal)
	ms := &seedmanagementv1alpha1.ManagedSeed{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          set.Spec.Template.Labels,
			Annotations:     set.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, seedmanagementv1alpha1.SchemeGroupVersion.WithKind("ManagedSeedSet"))},
		},
		Spec: seedmanagementv1alpha1.ManagedSeedSpec{
			Shoot:     &seedmanagementv1alpha1.Shoot{Name: name},
			Gardenlet: *set.Spec.Template.Spec.Gardenlet.DeepCopy(),
		},
	}
	if _, err := encoding.DecodeGardenletConfiguration(&ms.Spec.Gardenlet.Config, false); err != nil {
		return nil, function.Terminal(fmt.Errorf("decoding the template's gardenlet configuration: %w", err))
	}
	return ms, nil
}
