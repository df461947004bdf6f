// Package merge is the pure half of GRM's ManagedResource controller on the target cluster: what
// an applied object becomes when the desired state of a ManagedResource meets the live object
// (Merge, InjectLabels), in which order objects are applied (SortForApply), how objects are
// matched with the ManagedResource's .status.resources across equivalent API groups (Index,
// Equivalences), whether a HorizontalPodAutoscaler owns an object's replicas (HorizontallyScaled),
// and the decisions taken before an object is deleted or released. Everything that needs the API
// server (reading the live object, creating, updating, deleting) stays with the caller.
package merge

import (
	"fmt"
	"maps"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
)

const (
	// DescriptionAnnotation is the annotation GRM writes on every object it manages, so that
	// whoever looks at the object learns that edits are reverted.
	DescriptionAnnotation = "resources.gardener.cloud/description"
	// Description is the value of DescriptionAnnotation.
	Description = `DO NOT EDIT - This resource is managed by gardener-resource-manager.
Any modifications are discarded and the resource is returned to the original state.`

	// referenceAnnotationPrefix starts the keys of the annotations through which GRM's garbage
	// collector learns which ConfigMaps and Secrets a workload references.
	referenceAnnotationPrefix = "reference.resources.gardener.cloud/"
	// restartedAtAnnotation is what `kubectl rollout restart` sets on a pod template.
	restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
)

// Options is what Merge needs beyond the two objects: the ManagedResource's force-overwrite
// switches, what the ManagedResource applied last time (its .status.resources entry for the
// object, so labels and annotations it no longer wants can be told from ones others added), and
// whether an HPA scales the object.
type Options struct {
	// ForceOverwriteLabels is the ManagedResource's .spec.forceOverwriteLabels: the desired
	// labels replace the live ones.
	ForceOverwriteLabels bool
	// OldLabels are the labels of the object's .status.resources entry.
	OldLabels map[string]string
	// ForceOverwriteAnnotations is the ManagedResource's .spec.forceOverwriteAnnotations.
	ForceOverwriteAnnotations bool
	// OldAnnotations are the annotations of the object's .status.resources entry.
	OldAnnotations map[string]string
	// HorizontallyScaled says that an HPA owns the object's replicas (see HorizontallyScaled).
	HorizontallyScaled bool
}

// Merge writes into current what GRM applies for desired, so that an update only changes what
// the ManagedResource owns: metadata the API server or others maintain (resourceVersion,
// finalizers, labels and annotations added by others), a non-empty status, and the spec fields
// that are immutable, allocated by the cluster or owned by someone else (replicas under an HPA,
// a Service's clusterIP and nodePorts, a Job's selector, ...) are kept from current. current is
// the live object; to create an object, pass a copy of desired. desired must already carry the
// injected labels (InjectLabels), and current must be what Gardener's apply reads: for a kind
// client-go's scheme knows, the typed object converted to unstructured.
func Merge(origin string, desired, current *unstructured.Unstructured, opts Options) error {
	live := current.DeepCopy()
	desired.DeepCopyInto(current)

	// The live metadata stays and is shared with live: the kind rules below therefore read the
	// merged labels, annotations and owner references when they look at the live object, as
	// Gardener's do.
	if metadata, ok := live.Object["metadata"].(map[string]any); ok && len(metadata) > 0 {
		current.Object["metadata"] = metadata
	}

	if opts.ForceOverwriteLabels {
		current.SetLabels(desired.GetLabels())
	} else {
		current.SetLabels(mergeOwned(desired.GetLabels(), live.GetLabels(), opts.OldLabels))
	}

	var annotations map[string]string
	if opts.ForceOverwriteAnnotations {
		annotations = desired.GetAnnotations()
	} else {
		// Reference annotations of the live object are never kept: the desired object carries
		// the right ones, and stale ones (of an object moved over from another ManagedResource,
		// thus unknown to OldAnnotations) would keep garbage alive.
		annotations = mergeOwned(desired.GetAnnotations(), withoutReferences(live.GetAnnotations()), opts.OldAnnotations)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DescriptionAnnotation] = Description
	annotations[resourcesv1alpha1.OriginAnnotation] = origin
	current.SetAnnotations(annotations)

	current.SetOwnerReferences(desired.GetOwnerReferences())

	if status, ok := live.Object["status"].(map[string]any); ok && len(status) > 0 {
		current.Object["status"] = status
	} else {
		delete(current.Object, "status")
	}

	// Unlike GRM's other switches, these two are on only for the exact string "true".
	wanted := desired.GetAnnotations()
	preserveReplicas := opts.HorizontallyScaled || wanted[resourcesv1alpha1.PreserveReplicas] == "true"
	preserveResources := wanted[resourcesv1alpha1.PreserveResources] == "true"

	switch current.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "extensions", Kind: "Deployment"}:
		return viaTyped(live, current, func(old, updated *appsv1.Deployment) {
			if updated.Spec.Replicas == nil || preserveReplicas {
				updated.Spec.Replicas = old.Spec.Replicas
			}
			keepPodTemplate(&old.Spec.Template, &updated.Spec.Template, preserveResources)
		})
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "extensions", Kind: "StatefulSet"}:
		return viaTyped(live, current, func(old, updated *appsv1.StatefulSet) {
			if updated.Spec.Replicas == nil || preserveReplicas {
				updated.Spec.Replicas = old.Spec.Replicas
			}
			// volumeClaimTemplates are immutable once the StatefulSet exists.
			if !old.CreationTimestamp.IsZero() {
				updated.Spec.VolumeClaimTemplates = old.Spec.VolumeClaimTemplates
			}
			keepPodTemplate(&old.Spec.Template, &updated.Spec.Template, preserveResources)
		})
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		return viaTyped(live, current, func(old, updated *appsv1.DaemonSet) {
			keepPodTemplate(&old.Spec.Template, &updated.Spec.Template, preserveResources)
		})
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		return viaTyped(live, current, func(old, updated *batchv1.Job) {
			// The selector is immutable, and the Job controller adds its own labels
			// (controller-uid, job-name) to the immutable pod template.
			updated.Spec.Selector = old.Spec.Selector
			updated.Spec.Template.Labels = labels.Merge(old.Spec.Template.Labels, updated.Spec.Template.Labels)
			keepPodTemplate(&old.Spec.Template, &updated.Spec.Template, preserveResources)
		})
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		switch current.GroupVersionKind().Version {
		case "v1":
			return viaTyped(live, current, func(old, updated *batchv1.CronJob) {
				keepPodTemplate(&old.Spec.JobTemplate.Spec.Template, &updated.Spec.JobTemplate.Spec.Template, preserveResources)
			})
		case "v1beta1":
			return viaTyped(live, current, func(old, updated *batchv1beta1.CronJob) {
				keepPodTemplate(&old.Spec.JobTemplate.Spec.Template, &updated.Spec.JobTemplate.Spec.Template, preserveResources)
			})
		default:
			return fmt.Errorf("cannot merge objects with gvk: %s", current.GroupVersionKind())
		}
	case schema.GroupKind{Kind: "Service"}:
		// Gardener's Service rule also re-adds live `loadbalancer.openstack.org*` annotations,
		// but it reads them from the live metadata after the merged annotations replaced them,
		// so it never adds anything: those annotations stay exactly when the label and
		// annotation merge above keeps them.
		return viaTyped(live, current, keepServiceAllocations)
	case schema.GroupKind{Kind: "ServiceAccount"}:
		return viaTyped(live, current, func(old, updated *corev1.ServiceAccount) {
			// Token controllers and image pull secret injectors own these lists.
			updated.Secrets = old.Secrets
			updated.ImagePullSecrets = old.ImagePullSecrets
		})
	}
	return nil
}

// viaTyped applies a kind rule to the typed forms of live and current and writes the result back
// into current. The round trip through client-go's scheme is part of what Gardener applies: it
// drops unknown fields and normalises the object (e.g. `status: {}`), and a version the scheme
// cannot convert to T (extensions/v1beta1 Deployments) is an error.
func viaTyped[T any, PT interface {
	*T
	runtime.Object
}](live, current *unstructured.Unstructured, rule func(old, updated PT)) error {
	old, updated := PT(new(T)), PT(new(T))
	if err := kubernetesscheme.Scheme.Convert(live, old, nil); err != nil {
		return err
	}
	if err := kubernetesscheme.Scheme.Convert(current, updated, nil); err != nil {
		return err
	}
	rule(old, updated)
	return kubernetesscheme.Scheme.Convert(updated, current, nil)
}

// keepPodTemplate keeps what others change on a pod template: the rollout restart marker, and
// with preserveResources the CPU and memory that e.g. a VPA set on containers of the same name.
func keepPodTemplate(old, updated *corev1.PodTemplateSpec, preserveResources bool) {
	if restartedAt, ok := old.Annotations[restartedAtAnnotation]; ok {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[restartedAtAnnotation] = restartedAt
	}
	if !preserveResources {
		return
	}
	for i := range updated.Spec.Containers {
		for j := range old.Spec.Containers {
			if old.Spec.Containers[j].Name == updated.Spec.Containers[i].Name {
				updated.Spec.Containers[i].Resources.Requests = withComputeOf(updated.Spec.Containers[i].Resources.Requests, old.Spec.Containers[j].Resources.Requests)
				updated.Spec.Containers[i].Resources.Limits = withComputeOf(updated.Spec.Containers[i].Resources.Limits, old.Spec.Containers[j].Resources.Limits)
				break
			}
		}
	}
}

// withComputeOf returns list with the CPU and memory quantities that old has.
func withComputeOf(list, old corev1.ResourceList) corev1.ResourceList {
	for name, quantity := range old {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			continue
		}
		if list == nil {
			list = corev1.ResourceList{}
		}
		list[name] = quantity
	}
	return list
}

// keepServiceAllocations keeps what the cluster allocated for a Service: node ports the desired
// ports leave open, the load balancer IP, the cluster IP (immutable, unless the Service becomes
// headless or was of type ExternalName) and the health check node port.
func keepServiceAllocations(old, updated *corev1.Service) {
	oldType := old.Spec.Type
	if oldType == "" {
		oldType = corev1.ServiceTypeClusterIP
	}
	// The applied Service states its defaulted type.
	if updated.Spec.Type == "" {
		updated.Spec.Type = corev1.ServiceTypeClusterIP
	}
	newType := updated.Spec.Type

	switch newType {
	case corev1.ServiceTypeExternalName:
		// There is no cluster IP to keep.
		return
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		var ports []corev1.ServicePort
		for _, port := range updated.Spec.Ports {
			kept := port
			if port.NodePort == 0 {
				// The last live port with the same number or name decides.
				for _, oldPort := range old.Spec.Ports {
					if oldPort.Port == port.Port || oldPort.Name == port.Name {
						kept.NodePort = oldPort.NodePort
					}
				}
			}
			ports = append(ports, kept)
		}
		updated.Spec.Ports = ports
		if updated.Spec.LoadBalancerIP == "" {
			updated.Spec.LoadBalancerIP = old.Spec.LoadBalancerIP
		}
	}

	if updated.Spec.ClusterIP != corev1.ClusterIPNone && oldType != corev1.ServiceTypeExternalName {
		updated.Spec.ClusterIP = old.Spec.ClusterIP
	}

	if oldType == corev1.ServiceTypeLoadBalancer && newType == corev1.ServiceTypeLoadBalancer &&
		old.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		updated.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		updated.Spec.HealthCheckNodePort == 0 {
		updated.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// mergeOwned lays desired over live and drops what the ManagedResource applied last time (old)
// but no longer wants, unless someone changed its value since. nil stands for an empty result.
func mergeOwned(desired, live, old map[string]string) map[string]string {
	merged := make(map[string]string, len(live)+len(desired))
	maps.Copy(merged, live)
	maps.Copy(merged, desired)
	for key, value := range old {
		if _, wanted := desired[key]; wanted {
			continue
		}
		if liveValue, ok := live[key]; ok && liveValue == value {
			delete(merged, key)
		}
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}

func withoutReferences(annotations map[string]string) map[string]string {
	out := make(map[string]string, len(annotations))
	for key, value := range annotations {
		if !strings.HasPrefix(key, referenceAnnotationPrefix) {
			out[key] = value
		}
	}
	return out
}
