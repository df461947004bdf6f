package highavailabilityconfig

import (
	"fmt"
	"strconv"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// replicaCount is the replica count obj should have, or nil to leave it alone: when it has no
// component type, or current (replicas or minReplicas) is unset or 0 (a hibernated workload,
// a disabled HPA). The replicas annotation overrides the count of the table:
//
//	component type \ failure tolerance type | unset | empty | non-empty
//	controller                              |   2   |   1   |     2
//	server (and any other type)             |   2   |   2   |     2
func replicaCount(obj client.Object, current *int32, failureToleranceType *gardencorev1beta1.FailureToleranceType) (*int32, error) {
	if ptr.Deref(current, 0) == 0 {
		return nil, nil
	}
	componentType := obj.GetLabels()[resourcesv1alpha1.HighAvailabilityConfigType]
	if componentType == "" {
		return nil, nil
	}
	if v := obj.GetAnnotations()[resourcesv1alpha1.HighAvailabilityConfigReplicas]; v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, invalidError{fmt.Errorf("annotation %s: %w", resourcesv1alpha1.HighAvailabilityConfigReplicas, err)}
		}
		return new(int32(n)), nil
	}
	if componentType == resourcesv1alpha1.HighAvailabilityConfigTypeController && failureToleranceType != nil && *failureToleranceType == "" {
		return new(int32(1)), nil
	}
	return new(int32(2)), nil
}

// mutateHPA raises minReplicas to the computed count (a higher minReplicas stays, as Gardener
// keeps it for compatibility), and maxReplicas to it where it would fall below minReplicas.
func (h *handler) mutateHPA(req admission.Request, p policy, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	replicas, err := replicaCount(hpa, hpa.Spec.MinReplicas, p.failureToleranceType)
	if err != nil || replicas == nil {
		return err
	}
	if ptr.Deref(hpa.Spec.MinReplicas, 0) < *replicas {
		h.log.Info("Mutating minReplicas", "namespace", req.Namespace, "name", req.Name, "minReplicas", *replicas)
		hpa.Spec.MinReplicas = replicas
	}
	if hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		h.log.Info("Mutating maxReplicas", "namespace", req.Namespace, "name", req.Name, "maxReplicas", *replicas)
		hpa.Spec.MaxReplicas = *replicas
	}
	return nil
}
