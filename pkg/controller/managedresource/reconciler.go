package managedresource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/grm"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/manifests"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/merge"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Reconciler applies one ManagedResource to its target cluster.
type Reconciler struct {
	Config    *Config
	Class     grm.Class
	ClusterID *grm.ClusterIdentity
	Source    function.ClusterClient
	// Target acts on the target of the reconcile's context (the tenant's cluster per seed).
	Target function.ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	return &Reconciler{
		Config: cfg, Class: cfg.Class(), ClusterID: grm.NewClusterIdentity(cfg.ClusterID, deps.Source.Reader),
		Source: deps.Source, Target: deps.Target, Clock: deps.Clock, Log: deps.Log,
	}, nil
}

// Reconcile converges the ManagedResource req names.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Serves(req.Key.Namespace) {
		return nil // sourceClientConnection.namespaces: another deployment's
	}
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := req.Reader.Get(ctx, req.Key, mr); err != nil {
		return err
	}
	if !r.Class.Concerns(mr) {
		return nil
	}
	if mr.Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.GardenerOperationReconcile {
		// Gardener's operation annotation asks for a reconcile: it is taken away first, as
		// Gardener's wrapper does, and the reconcile follows.
		if _, err := r.Source.Writer.Patch(ctx, mr, func() { delete(mr.Annotations, v1beta1constants.GardenerOperation) }); err != nil {
			return err
		}
	}
	if merge.Ignored(mr) && mr.DeletionTimestamp == nil {
		return r.reportIgnored(ctx, mr)
	}
	if transferring := r.Class.TransferringResponsibility(mr); mr.DeletionTimestamp != nil || transferring {
		return r.delete(ctx, req, mr)
	}
	if r.Class.WaitForCleanup(mr) {
		return nil // the instance of the old class cleans up first; its finalizer's removal is an event
	}
	return r.apply(ctx, req, mr)
}

func (r *Reconciler) now() metav1.Time { return metav1.NewTime(r.Clock.Now()) }

// condition updates the condition t of mr's status in place (Gardener's builder semantics).
func (r *Reconciler) condition(mr *resourcesv1alpha1.ManagedResource, t gardencorev1beta1.ConditionType, status gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	c := function.GetOrInitCondition(r.Clock.Now(), mr.Status.Conditions, t)
	return function.UpdatedCondition(r.Clock.Now(), c, status, reason, message)
}

// setConditions writes the conditions into mr's status; nothing is sent when nothing changed.
func (r *Reconciler) setConditions(ctx context.Context, mr *resourcesv1alpha1.ManagedResource, conditions ...gardencorev1beta1.Condition) error {
	_, err := r.Source.Writer.PatchStatus(ctx, mr, func() {
		mr.Status.Conditions = function.MergeConditions(mr.Status.Conditions, conditions...)
	})
	return err
}

func (r *Reconciler) reportIgnored(ctx context.Context, mr *resourcesv1alpha1.ManagedResource) error {
	const message = "ManagedResource is marked to be ignored."
	reason := resourcesv1alpha1.ConditionManagedResourceIgnored
	return r.setConditions(ctx, mr,
		r.condition(mr, resourcesv1alpha1.ResourcesApplied, gardencorev1beta1.ConditionTrue, reason, message),
		r.condition(mr, resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionTrue, reason, message),
		r.condition(mr, resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionFalse, reason, message),
	)
}

// apply is Gardener's reconcile: the finalizer, the objects of the Secrets, the conditions
// invalidated when the set changed, the objects no longer wanted deleted, those now ignored
// released, the wanted ones created or updated, and the status.
func (r *Reconciler) apply(ctx context.Context, req function.Request, mr *resourcesv1alpha1.ManagedResource) error {
	if !slices.Contains(mr.Finalizers, r.Class.Finalizer()) {
		if _, err := r.Source.Writer.Patch(ctx, mr, func() { mr.Finalizers = append(mr.Finalizers, r.Class.Finalizer()) }); err != nil {
			return fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	clusterID, err := r.ClusterID.Get(ctx)
	if err != nil {
		return err
	}
	origin := grm.Origin(clusterID, client.ObjectKeyFromObject(mr))
	applied := function.GetOrInitCondition(r.Clock.Now(), mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)

	var secrets []*corev1.Secret
	for _, ref := range mr.Spec.SecretRefs {
		secret := &corev1.Secret{}
		if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: mr.Namespace, Name: ref.Name}, secret); err != nil {
			applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionFalse, "CannotReadSecret", err.Error())
			if err := r.setConditions(ctx, mr, applied); err != nil {
				return err
			}
			return fmt.Errorf("could not read secret '%s': %w", ref.Name, err)
		}
		secrets = append(secrets, secret)
	}
	mapper, err := r.Target.Mapper(ctx)
	if err != nil {
		return err
	}
	equivalences := merge.NewEquivalences(mr.Spec.Equivalences...)
	result := manifests.Decode(secrets, scopeOf(mapper), manifests.Options{
		InjectLabels: mr.Spec.InjectLabels, ManagedBy: r.Config.ManagedByLabelValue,
		ForceOverwriteLabels: ptr.Deref(mr.Spec.ForceOverwriteLabels, false), ForceOverwriteAnnotations: ptr.Deref(mr.Spec.ForceOverwriteAnnotations, false),
		Previous: mr.Status.Resources, Equivalences: equivalences,
	})

	// A changed set of objects (or of data) makes the health checks' conditions pending.
	if !apiequality.Semantic.DeepEqual(mr.Status.Resources, result.Resources) || ptr.Deref(mr.Status.SecretsDataChecksum, "") != result.Checksum || mr.Status.SecretsDataChecksum == nil {
		reason, message := resourcesv1alpha1.ConditionApplyProgressing, "The resources are currently being reconciled."
		switch applied.Reason {
		case resourcesv1alpha1.ConditionApplyFailed, resourcesv1alpha1.ConditionDeletionFailed, resourcesv1alpha1.ConditionDeletionPending:
			reason, message = applied.Reason, applied.Message
		}
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionProgressing, reason, message)
		if err := r.setConditions(ctx, mr,
			r.condition(mr, resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionUnknown, resourcesv1alpha1.ConditionChecksPending, "The health checks have not yet been executed for the current set of resources."),
			r.condition(mr, resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionUnknown, resourcesv1alpha1.ConditionChecksPending, "Checks have not yet been executed for the current set of resources."),
			applied,
		); err != nil {
			return err
		}
	}

	if done, err := r.deleteAndReport(ctx, req, mr, result.Stale, applied); !done {
		return err
	}

	if err := r.release(ctx, req, result.Release, origin); err != nil {
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ReleaseOfOrphanedResourcesFailed, err.Error())
		if err := r.setConditions(ctx, mr, applied); err != nil {
			return err
		}
		return fmt.Errorf("could not release all orphaned resources: %w", err)
	}

	// Write-ahead: status.resources names everything that may exist before anything is created,
	// so that a deletion beginning meanwhile (or a reconcile of an older spec) deletes it too.
	// The final status below trims it to what is wanted.
	if ahead := WriteAhead(mr.Status.Resources, result.Resources); ahead != nil {
		if _, err := r.Source.Writer.PatchStatus(ctx, mr, func() { mr.Status.Resources = ahead }); err != nil {
			return err
		}
	}

	labels := manifests.Options{InjectLabels: mr.Spec.InjectLabels, ManagedBy: r.Config.ManagedByLabelValue}.Labels()
	if err := r.applyObjects(ctx, req, origin, result.Objects, labels, equivalences); err != nil {
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionApplyFailed, err.Error())
		if err := r.setConditions(ctx, mr, applied); err != nil {
			return err
		}
		return fmt.Errorf("could not apply all new resources: %w", err)
	}

	if len(result.Errors) > 0 {
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionDecodingFailed, result.DecodingFailure())
	} else {
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionTrue, resourcesv1alpha1.ConditionApplySucceeded, "All resources are applied.")
	}
	checksum := result.Checksum
	_, err = r.Source.Writer.PatchStatus(ctx, mr, func() {
		mr.Status.Conditions = function.MergeConditions(mr.Status.Conditions, applied)
		mr.Status.SecretsDataChecksum = &checksum
		mr.Status.Resources = result.Resources
		mr.Status.ObservedGeneration = mr.Generation
	})
	if apierrors.IsConflict(err) {
		// Another reconcile wrote the status since (e.g. of a newer spec, having deleted what it
		// no longer wants): what this one created may be unwanted there, and no longer named.
		// It is named again, so that the reconcile from live state that follows deletes it as
		// stale, or its deletion does.
		return errors.Join(err, r.keepNamed(ctx, mr, result.Resources))
	}
	return err
}

// keepNamed adds the objects a reconcile applied to the live status.resources, where missing.
func (r *Reconciler) keepNamed(ctx context.Context, mr *resourcesv1alpha1.ManagedResource, applied []resourcesv1alpha1.ObjectReference) error {
	live := &resourcesv1alpha1.ManagedResource{}
	if err := r.Source.Reader.Get(ctx, client.ObjectKeyFromObject(mr), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	ahead := WriteAhead(live.Status.Resources, applied)
	if ahead == nil {
		return nil
	}
	_, err := r.Source.Writer.PatchStatus(ctx, live, func() { live.Status.Resources = ahead })
	return err
}

// WriteAhead is what status.resources must name before objects are applied: what it names and
// what is wanted, in that order; nil when it names everything wanted already.
func WriteAhead(recorded, wanted []resourcesv1alpha1.ObjectReference) []resourcesv1alpha1.ObjectReference {
	var missing []resourcesv1alpha1.ObjectReference
	for _, w := range wanted {
		if !slices.ContainsFunc(recorded, func(r resourcesv1alpha1.ObjectReference) bool { return sameObject(r, w) }) {
			missing = append(missing, w)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return append(slices.Clone(recorded), missing...)
}

func sameObject(a, b resourcesv1alpha1.ObjectReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// UndoCreations undoes what a reconcile created for a ManagedResource that was deleted (or
// replaced) meanwhile: as the deletion does, the objects are deleted unless the ManagedResource
// keeps its objects (keepObjects), in which case what was created stays, as it would have had it
// been created before the deletion.
func UndoCreations(ctx context.Context, req function.UndoRequest) error {
	if mr, ok := req.Primary.(*resourcesv1alpha1.ManagedResource); ok && ptr.Deref(mr.Spec.KeepObjects, false) {
		return nil
	}
	return function.DefaultUndo(ctx, req)
}

// scopeOf tells namespaced kinds from cluster-scoped ones by the target's mapper.
func scopeOf(mapper meta.RESTMapper) manifests.Scope {
	return func(gvk schema.GroupVersionKind) (bool, bool) {
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil || mapping == nil {
			return false, false
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, true
	}
}

// applyObjects creates or updates every wanted object, in Gardener's order. Objects an HPA
// scales keep their replicas.
func (r *Reconciler) applyObjects(ctx context.Context, req function.Request, origin string, objects []manifests.Object, labels map[string]string, equivalences merge.Equivalences) error {
	merge.SortForApply(objects, func(o manifests.Object) *unstructured.Unstructured { return o.Desired })
	hpas := &autoscalingv1.HorizontalPodAutoscalerList{}
	// From the API server's watch cache (resourceVersion 0), as Gardener reads them from its
	// informer's: a consistent LIST right after a write waits for the cache to catch up with etcd
	// (about 100 ms), on every event, for objects that rarely change.
	if err := req.Target.List(ctx, hpas, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("failed to list all HPAs: %w", err)
	}
	scaled, err := merge.NewScaleTargets(hpas.Items)
	if err != nil {
		return err
	}
	for _, o := range objects {
		o.Merge.HorizontallyScaled = merge.HorizontallyScaled(o.Desired, scaled, equivalences)
		if err := r.applyObject(ctx, req, origin, o, labels); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) applyObject(ctx context.Context, req function.Request, origin string, o manifests.Object, labels map[string]string) error {
	desired := o.Desired
	name := describe(desired)
	current, err := r.read(ctx, req.Target, desired)
	switch {
	case apierrors.IsNotFound(err):
		created := desired.DeepCopy()
		if merge.Ignored(desired) {
			merge.LeaveIgnored(created)
		} else {
			if err := merge.InjectLabels(desired, labels); err != nil {
				return fmt.Errorf("error injecting labels into object %q: %s", name, err)
			}
			if err := merge.Merge(origin, desired, created, o.Merge); err != nil {
				return fmt.Errorf("error during apply of object %q: %s", name, err)
			}
		}
		if err := r.Target.Writer.Create(ctx, created); err != nil {
			return fmt.Errorf("error during apply of object %q: %w", name, err)
		}
		r.Log.Info("created resource because it was not existing before", "resource", name)
		return nil
	case err != nil:
		return fmt.Errorf("error during apply of object %q: %w", name, err)
	}
	var mergeErr error
	changed, err := r.Target.Writer.Patch(ctx, current, func() {
		if merge.Ignored(desired) {
			merge.LeaveIgnored(current)
			return
		}
		if mergeErr = merge.InjectLabels(desired, labels); mergeErr != nil {
			mergeErr = fmt.Errorf("error injecting labels into object %q: %s", name, mergeErr)
			return
		}
		mergeErr = merge.Merge(origin, desired, current, o.Merge)
	})
	if mergeErr != nil {
		return mergeErr
	}
	if apierrors.IsConflict(err) {
		return err // the runtime reconciles again from live state
	}
	if apierrors.IsInvalid(err) && merge.DeleteOnInvalidUpdate(current, err) {
		return r.deleteInvalid(ctx, current, name, err)
	}
	if err != nil {
		return fmt.Errorf("error during apply of object %q: %s", name, err)
	}
	if changed {
		r.Log.Info("updated resource because its actual state differed from the desired state", "resource", name)
		return nil
	}
	if r.Config.AlwaysUpdate {
		// controllers.managedResource.alwaysUpdate: the object goes through admission again
		// even when nothing changed, as Gardener's unconditional update does.
		if err := r.Target.Writer.Touch(ctx, current); err != nil {
			return fmt.Errorf("error during apply of object %q: %s", name, err)
		}
	}
	return nil
}

// deleteInvalid deletes an object whose update the API server refused as invalid, when it asks
// for it (delete-on-invalid-update, or an immutable ConfigMap or Secret): the next reconcile
// creates it anew.
func (r *Reconciler) deleteInvalid(ctx context.Context, current *unstructured.Unstructured, name string, updateErr error) error {
	propagation, err := merge.DeletionPropagation(current)
	if err != nil {
		return fmt.Errorf("invalid deletion propagation policy on object %s: %w", name, err)
	}
	var opts []client.DeleteOption
	if propagation != "" {
		opts = append(opts, client.PropagationPolicy(propagation))
	}
	if err := r.Target.Writer.Delete(ctx, current, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error deleting object %q after 'invalid' update error: %s", name, err)
	}
	// A transient answer: the recreate follows with the retry.
	return fmt.Errorf("deleted object %q because of 'invalid' update error, and 'delete-on-invalid-update' annotation on object or the resource is an immutable ConfigMap/Secret: %s", name, updateErr)
}

// read reads the live object desired names as Gardener's apply does: typed for the kinds
// client-go's scheme knows (then converted), so that exactly their fields are compared.
func (r *Reconciler) read(ctx context.Context, reader client.Reader, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := client.ObjectKeyFromObject(desired)
	gvk := desired.GroupVersionKind()
	if typed, err := kubernetesscheme.Scheme.New(gvk); err == nil {
		obj := typed.(client.Object)
		if err := reader.Get(ctx, key, obj); err != nil {
			return nil, err
		}
		current := &unstructured.Unstructured{}
		if err := kubernetesscheme.Scheme.Convert(obj, current, nil); err != nil {
			return nil, err
		}
		current.SetGroupVersionKind(gvk)
		return current, nil
	}
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(gvk)
	if err := reader.Get(ctx, key, current); err != nil {
		return nil, err
	}
	return current, nil
}

// release drops the origin of objects that now have mode Ignore and were managed before.
func (r *Reconciler) release(ctx context.Context, req function.Request, refs []resourcesv1alpha1.ObjectReference, origin string) error {
	var errs []string
	for _, ref := range refs {
		obj := objectOf(ref)
		if err := req.Target.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				errs = append(errs, fmt.Sprintf("error getting object %q: %v", describe(obj), err))
			}
			continue
		}
		if _, err := r.Target.Writer.Patch(ctx, obj, func() { merge.Release(obj, origin) }); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Sprintf("error patching object %q: %v", describe(obj), err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(joinErrors("Could not release all orphaned resources", errs))
}

// delete removes what mr applied (unless it keeps its objects) and then its finalizer.
func (r *Reconciler) delete(ctx context.Context, req function.Request, mr *resourcesv1alpha1.ManagedResource) error {
	deleting := "The resources are currently being deleted."
	if err := r.setConditions(ctx, mr,
		r.condition(mr, resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionDeletionPending, deleting),
		r.condition(mr, resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionTrue, resourcesv1alpha1.ConditionDeletionPending, deleting),
	); err != nil {
		return err
	}
	if !ptr.Deref(mr.Spec.KeepObjects, false) {
		applied := function.GetOrInitCondition(r.Clock.Now(), mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)
		message := deleting
		switch applied.Reason {
		case resourcesv1alpha1.ConditionDeletionPending, resourcesv1alpha1.ConditionDeletionFailed:
			message = applied.Message
		}
		applied = function.UpdatedCondition(r.Clock.Now(), applied, gardencorev1beta1.ConditionProgressing, resourcesv1alpha1.ConditionDeletionPending, message)
		if err := r.setConditions(ctx, mr, applied); err != nil {
			return err
		}
		if done, err := r.deleteAndReport(ctx, req, mr, mr.Status.Resources, applied); !done {
			return err
		}
	}
	if !slices.Contains(mr.Finalizers, r.Class.Finalizer()) {
		return nil
	}
	_, err := r.Source.Writer.Patch(ctx, mr, func() {
		mr.Finalizers = slices.DeleteFunc(mr.Finalizers, func(f string) bool { return f == r.Class.Finalizer() })
	})
	return client.IgnoreNotFound(err)
}

// deleteAndReport deletes the objects refs name; when some are not gone, ResourcesApplied says
// why (DeletionPending while they go, DeletionFailed when their deletion failed) and done is
// false: the reconcile ends there, with the error to answer (nil while pending: the objects'
// deletion events, or the next sync, come back for the rest).
func (r *Reconciler) deleteAndReport(ctx context.Context, req function.Request, mr *resourcesv1alpha1.ManagedResource, refs []resourcesv1alpha1.ObjectReference, applied gardencorev1beta1.Condition) (done bool, err error) {
	pending, err := r.deleteObjects(ctx, req, mr, refs)
	if err == nil {
		return true, nil
	}
	status, reason := gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionDeletionFailed
	if pending {
		status, reason = gardencorev1beta1.ConditionProgressing, resourcesv1alpha1.ConditionDeletionPending
	}
	applied = function.UpdatedCondition(r.Clock.Now(), applied, status, reason, err.Error())
	if err := r.setConditions(ctx, mr, applied); err != nil {
		return false, err
	}
	if pending {
		r.Log.Info("deletion of resources still pending", "managedResource", client.ObjectKeyFromObject(mr), "reason", err)
		return false, nil
	}
	return false, err
}

// deleteObjects deletes the objects refs name, concurrently, as Gardener's cleaner does. pending
// says that some are not gone yet (being deleted, or their deletion failed for now); err lists
// why.
func (r *Reconciler) deleteObjects(ctx context.Context, req function.Request, mr *resourcesv1alpha1.ManagedResource, refs []resourcesv1alpha1.ObjectReference) (bool, error) {
	type outcome struct {
		name    string
		pending bool
		err     error
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes []outcome
	)
	deletePVCs := ptr.Deref(mr.Spec.DeletePersistentVolumeClaims, false)
	for _, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obj := objectOf(ref)
			pending, err := r.deleteObject(ctx, req, obj, deletePVCs)
			mu.Lock()
			outcomes = append(outcomes, outcome{name: describe(obj), pending: pending, err: err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].name < outcomes[j].name })
	var (
		pending bool
		errs    []string
	)
	for _, o := range outcomes {
		switch {
		case o.pending:
			pending = true
			msg := fmt.Sprintf("deletion of old resource %q is still pending", o.name)
			if o.err != nil {
				msg = fmt.Sprintf("%s: %v", msg, o.err)
			}
			errs = append(errs, msg)
		case o.err != nil:
			errs = append(errs, fmt.Sprintf("error during deletion of old resource %q: %v", o.name, o.err))
		}
	}
	if len(errs) == 0 {
		return false, nil
	}
	return pending, errors.New(joinErrors("Could not clean all old resources", errs))
}

// joinErrors is Gardener's message for several errors with a prefix.
func joinErrors(prefix string, errs []string) string {
	if len(errs) == 1 {
		return fmt.Sprintf("%s: 1 error occurred: %s", prefix, errs[0])
	}
	return fmt.Sprintf("%s: %d errors occurred: [%s]", prefix, len(errs), strings.Join(errs, ", "))
}

// deleteObject deletes one object; pending says it is not gone yet.
func (r *Reconciler) deleteObject(ctx context.Context, req function.Request, obj *unstructured.Unstructured, deletePVCs bool) (bool, error) {
	if err := req.Target.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil // gone
		}
		return true, err
	}
	if merge.KeepObject(obj) {
		return false, nil
	}
	if r.Config.GarbageCollectorEnabled && merge.GarbageCollectable(obj) {
		return false, nil
	}
	if err := r.cleanUpClaims(ctx, obj, deletePVCs); err != nil {
		return true, err
	}
	if obj.GetDeletionTimestamp() == nil {
		var opts []client.DeleteOption
		if merge.DeletesInForeground(obj.GroupVersionKind().Group) {
			opts = append(opts, client.PropagationPolicy(metav1.DeletePropagationForeground))
		}
		if err := r.Target.Writer.Delete(ctx, obj, opts...); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return false, nil
			}
			return true, err
		}
		// Most objects are gone as soon as they are deleted: one more read tells, so that the
		// reconcile completes now instead of when the next event or sync comes (Gardener looks
		// again after 5s).
		if err := r.Target.Reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
			return false, nil
		}
		return true, nil
	}
	due, err := merge.FinalizeDue(obj, r.Clock.Now())
	if err != nil {
		return true, fmt.Errorf("error when finalizing resource if necessary: %w", err)
	}
	if due {
		if _, err := r.Target.Writer.Patch(ctx, obj, func() { obj.SetFinalizers(nil) }); err != nil && !apierrors.IsNotFound(err) {
			return true, fmt.Errorf("error when finalizing resource if necessary: %w", err)
		}
	}
	return true, nil
}

// cleanUpClaims deletes the PersistentVolumeClaims a StatefulSet leaves behind, when the
// ManagedResource asks for it.
func (r *Reconciler) cleanUpClaims(ctx context.Context, obj *unstructured.Unstructured, deletePVCs bool) error {
	selector, cleanup, err := merge.PVCCleanup(obj, deletePVCs)
	if err != nil || !cleanup {
		return err
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Target.Reader.List(ctx, claims, client.InNamespace(obj.GetNamespace()), client.MatchingLabels(selector)); err != nil {
		return fmt.Errorf("%s: could not list PVCs of StatefulSet: %v", merge.PVCCleanupFailed, err)
	}
	for i := range claims.Items {
		if err := r.Target.Writer.Delete(ctx, &claims.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("%s: %v", merge.PVCCleanupFailed, err)
		}
	}
	return nil
}

func objectOf(ref resourcesv1alpha1.ObjectReference) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ref.APIVersion)
	obj.SetKind(ref.Kind)
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	return obj
}

// describe names an object as Gardener's messages do: apiVersion/kind/namespace/name, the
// namespace "default" when empty (but for Namespaces).
func describe(obj *unstructured.Unstructured) string {
	apiVersion, kind := obj.GroupVersionKind().ToAPIVersionAndKind()
	return merge.Key(apiVersion, kind, obj.GetNamespace(), obj.GetName())
}
