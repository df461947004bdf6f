package merge

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ScaleTargets are the objects HorizontalPodAutoscalers of the target cluster scale, by Key.
type ScaleTargets sets.Set[string]

// NewScaleTargets collects the scale targets of hpas, the target cluster's
// HorizontalPodAutoscalers (listed as autoscaling/v1, as Gardener does; when the cluster serves no
// HPAs at all, pass none). It fails on a scale target whose apiVersion does not parse, which fails
// the whole apply in Gardener. VPAs need no such care: they only change pods, through a webhook.
func NewScaleTargets(hpas []autoscalingv1.HorizontalPodAutoscaler) (ScaleTargets, error) {
	targets := sets.New[string]()
	for _, hpa := range hpas {
		ref := hpa.Spec.ScaleTargetRef
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid API version in scaleTargetReference of HorizontalPodAutoscaler '%s/%s': %w", hpa.Namespace, hpa.Name, err)
		}
		targets.Insert(Key(gv.Group, ref.Kind, hpa.Namespace, ref.Name))
	}
	return ScaleTargets(targets), nil
}

// HorizontallyScaled says whether an HPA scales obj, directly or through an equivalent group and
// kind, in which case its live replicas are kept (Options.HorizontallyScaled): the HPA, not the
// ManagedResource, owns them.
func HorizontallyScaled(obj *unstructured.Unstructured, targets ScaleTargets, equivalences Equivalences) bool {
	scaled := sets.Set[string](targets)
	group := obj.GroupVersionKind().Group
	if scaled.Has(Key(group, obj.GetKind(), obj.GetNamespace(), obj.GetName())) {
		return true
	}
	for gk := range equivalences.Of(metav1.GroupKind{Group: group, Kind: obj.GetKind()}) {
		if scaled.Has(Key(gk.Group, gk.Kind, obj.GetNamespace(), obj.GetName())) {
			return true
		}
	}
	return false
}
