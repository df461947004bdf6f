package merge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
)

// GarbageCollectableLabel marks ConfigMaps and Secrets that GRM's garbage collector deletes once
// no workload references them.
const GarbageCollectableLabel = "resources.gardener.cloud/garbage-collectable-reference"

// PVCCleanupFailed starts the errors of the PersistentVolumeClaim clean-up of a deleted
// StatefulSet (see PVCCleanup).
const PVCCleanupFailed = "failed cleaning up PersistentVolumeClaims of StatefulSet"

// Truthy reads a boolean switch from labels or annotations the way GRM does: set and true by
// strconv.ParseBool ("1", "t", "T", "TRUE", "true", "True"); anything else is off.
func Truthy(values map[string]string, key string) bool {
	value, ok := values[key]
	if !ok {
		return false
	}
	on, _ := strconv.ParseBool(value)
	return on
}

// Ignored says whether obj opted out of GRM (resources.gardener.cloud/ignore): a ManagedResource
// that is not reconciled (only its conditions say so) unless it is being deleted, or a desired
// object whose live state is left alone (see LeaveIgnored).
func Ignored(obj metav1.Object) bool {
	return Truthy(obj.GetAnnotations(), resourcesv1alpha1.Ignore)
}

// LeaveIgnored is the apply step in place of InjectLabels and Merge for a desired object that is
// Ignored: the live object (or, on creation, the copy of the desired object) is written back as it
// is, except that it no longer claims to be managed.
func LeaveIgnored(current *unstructured.Unstructured) {
	annotations := current.GetAnnotations()
	delete(annotations, DescriptionAnnotation)
	current.SetAnnotations(annotations)
}

// Release turns an object that a ManagedResource now marks with mode Ignore, and that it managed
// before, back into an unmanaged one: it drops the origin and description annotations, so the
// caller must merge-patch obj (as read from the target cluster) against its state before the
// call. It leaves obj alone and returns false when another ManagedResource (another origin) has
// taken the object over meanwhile.
func Release(obj *unstructured.Unstructured, origin string) bool {
	annotations := obj.GetAnnotations()
	if annotations[resourcesv1alpha1.OriginAnnotation] != origin {
		return false
	}
	delete(annotations, resourcesv1alpha1.OriginAnnotation)
	delete(annotations, DescriptionAnnotation)
	obj.SetAnnotations(annotations)
	return true
}

// KeepObject says whether an object the ManagedResource no longer wants (or that goes with the
// ManagedResource) stays in the target cluster (resources.gardener.cloud/keep-object): the
// caller skips its deletion and counts it as gone.
func KeepObject(obj metav1.Object) bool {
	return Truthy(obj.GetAnnotations(), resourcesv1alpha1.KeepObject)
}

// GarbageCollectable says whether obj, an object to delete, is a ConfigMap or Secret left to GRM's
// garbage collector: while the garbage collector runs, the caller keeps it, because rolling
// workloads may still reference it.
func GarbageCollectable(obj *unstructured.Unstructured) bool {
	return Truthy(obj.GetLabels(), GarbageCollectableLabel) && isConfigMapOrSecret(obj)
}

// DeleteOnInvalidUpdate says whether an object whose update the API server rejected as invalid is
// deleted (and created again by the next reconciliation): when it asks for it
// (resources.gardener.cloud/delete-on-invalid-update), or when it is an immutable ConfigMap or
// Secret whose data changed, which cannot be updated at all. obj is the merged object and err the
// update's error.
func DeleteOnInvalidUpdate(obj *unstructured.Unstructured, err error) bool {
	if Truthy(obj.GetAnnotations(), resourcesv1alpha1.DeleteOnInvalidUpdate) {
		return true
	}
	if !isConfigMapOrSecret(obj) {
		return false
	}
	cause, ok := apierrors.StatusCause(err, metav1.CauseType(field.ErrorTypeForbidden))
	return ok && strings.Contains(cause.Message, "field is immutable when `immutable` is set")
}

var propagationPolicies = sets.New(metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan)

// DeletionPropagation is the propagation policy an object asks for when it is deleted after an
// invalid update (resources.gardener.cloud/deletion-propagation-on-invalid-update); "" means the
// API server's default. An unknown policy is an error, which fails the apply of the object.
func DeletionPropagation(obj metav1.Object) (metav1.DeletionPropagation, error) {
	value, ok := obj.GetAnnotations()[resourcesv1alpha1.DeletionPropagationOnInvalidUpdate]
	if !ok {
		return "", nil
	}
	policy := metav1.DeletionPropagation(value)
	if !propagationPolicies.Has(policy) {
		return "", fmt.Errorf("%q is invalid, supported values: %+v", value, sets.List(propagationPolicies))
	}
	return policy, nil
}

// DeletesInForeground says whether objects of an API group that a ManagedResource no longer wants
// are deleted with foreground propagation, so that what they own (ReplicaSets, Pods, the Jobs of a
// batch/v1beta1 CronJob, which orphans by default) goes first. Other groups use the default:
// foreground deletion is unreliable for some of them (RBAC, core Services).
func DeletesInForeground(group string) bool {
	switch group {
	case "apps", "extensions", "batch":
		return true
	}
	return false
}

// ParseFinalizeDeletionAfter reads how long an object may stay in deletion before GRM removes its
// finalizers (resources.gardener.cloud/finalize-deletion-after, a Go duration); 0 when not set.
func ParseFinalizeDeletionAfter(obj metav1.Object) (time.Duration, error) {
	value, ok := obj.GetAnnotations()[resourcesv1alpha1.FinalizeDeletionAfter]
	if !ok {
		return 0, nil
	}
	after, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("failed parsing duration of %s annotation: %w", resourcesv1alpha1.FinalizeDeletionAfter, err)
	}
	return after, nil
}

// FinalizeDue says whether the caller must now remove the finalizers of obj, an object it has
// just asked the API server to delete, as read before that request: it has asked to be finalized
// after a grace period (ParseFinalizeDeletionAfter), the grace period since its
// deletionTimestamp has passed, and it has finalizers. The caller then merge-patches
// metadata.finalizers away; the deletion stays pending either way, and an error too leaves it
// pending. A v1 Namespace always fails here once due: Gardener's namespace finalizer (which would
// also clear spec.finalizers through the finalize subresource) refuses the unstructured object it
// is handed, and this keeps that outcome.
func FinalizeDue(obj *unstructured.Unstructured, now time.Time) (bool, error) {
	after, err := ParseFinalizeDeletionAfter(obj)
	if err != nil || after == 0 {
		return false, err
	}
	deletion := obj.GetDeletionTimestamp()
	if deletion == nil || deletion.UTC().Add(after).After(now.UTC()) {
		return false, nil
	}
	if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
		return false, errors.New("failed checking whether resource has finalizers: corev1.Namespace expected")
	}
	return len(obj.GetFinalizers()) > 0, nil
}

// PVCCleanup is the clean-up before deleting obj, an object the ManagedResource no longer wants:
// a StatefulSet with volumeClaimTemplates, of a ManagedResource with
// .spec.deletePersistentVolumeClaims, leaves PersistentVolumeClaims behind that the ManagedResource
// wants gone too. When cleanup is true, the caller lists the PersistentVolumeClaims in obj's
// namespace matching selector (the StatefulSet controller gives them the StatefulSet's selector
// labels; an empty selector matches every claim of the namespace, as in Gardener) and, if there
// are any, deletes them all (DeleteAllOf) before deleting obj; failures are reported as
// PVCCleanupFailed+": could not list PVCs of StatefulSet: <err>" and PVCCleanupFailed+": <err>"
// and leave the deletion pending.
func PVCCleanup(obj *unstructured.Unstructured, deletePVCs bool) (selector map[string]string, cleanup bool, err error) {
	gk := obj.GroupVersionKind().GroupKind()
	if !deletePVCs || gk.Kind != "StatefulSet" || (gk.Group != "apps" && gk.Group != "extensions") {
		return nil, false, nil
	}
	statefulSet := &appsv1.StatefulSet{}
	if err := kubernetesscheme.Scheme.Convert(obj, statefulSet, nil); err != nil {
		return nil, false, fmt.Errorf("%s: could not convert object to StatefulSet: %v", PVCCleanupFailed, err)
	}
	if len(statefulSet.Spec.VolumeClaimTemplates) == 0 {
		return nil, false, nil
	}
	if statefulSet.Spec.Selector == nil {
		return nil, false, fmt.Errorf("%s: StatefulSet has no selector", PVCCleanupFailed)
	}
	return statefulSet.Spec.Selector.MatchLabels, true, nil
}

func isConfigMapOrSecret(obj *unstructured.Unstructured) bool {
	return obj.GetAPIVersion() == "v1" && (obj.GetKind() == "ConfigMap" || obj.GetKind() == "Secret")
}
