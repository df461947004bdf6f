package highavailabilityconfig

import (
	"slices"
	"strconv"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// pinZones requires nodes in the Namespace's zones when it has zones and either a failure
// tolerance type (any value) or zone pinning. Node selector terms are ORed, so the requirement
// goes into every term, replacing whatever the term said about zones.
func pinZones(template *corev1.PodTemplateSpec, p policy) {
	if len(p.zones) == 0 || (p.failureToleranceType == nil && !p.zonePinning) {
		return
	}
	spec := &template.Spec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	required := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil {
		required = &corev1.NodeSelector{}
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	}
	if len(required.NodeSelectorTerms) == 0 {
		required.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range required.NodeSelectorTerms {
		term := &required.NodeSelectorTerms[i]
		term.MatchExpressions = append(slices.DeleteFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == corev1.LabelTopologyZone
		}), corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(p.zones)})
	}
}

// spread adds topology spread constraints over hosts (and zones) when the workload has more
// than one replica, replacing the template's own constraints on those two keys. maxReplicas
// (of the HPA that scales the workload) bounds minDomains: more domains than replicas cannot
// be filled.
func spread(w workload, p policy, scaled bool, maxReplicas int32, multipleNodes bool) {
	replicas := ptr.Deref(*w.replicas, 0)
	// Without an HPA, or before the HPA has been raised to the new replica count, the replicas
	// are the most there will be.
	if !scaled || replicas > maxReplicas {
		maxReplicas = replicas
	}
	hostSpread, _ := strconv.ParseBool(w.obj.GetAnnotations()[resourcesv1alpha1.HighAvailabilityConfigHostSpread])
	if constraints := spreadConstraints(w, p, replicas, maxReplicas, hostSpread, multipleNodes); constraints != nil {
		spec := &w.template.Spec
		spec.TopologySpreadConstraints = append(slices.DeleteFunc(spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == corev1.LabelHostname || c.TopologyKey == corev1.LabelTopologyZone
		}), constraints...)
	}
	if w.perRevision {
		// Every constraint, the template's own included: a rolling update must not count the
		// old revision's pods when spreading the new one's (kubernetes/kubernetes#98215).
		for i, c := range w.template.Spec.TopologySpreadConstraints {
			if !slices.Contains(c.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey) {
				w.template.Spec.TopologySpreadConstraints[i].MatchLabelKeys = append(c.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey)
			}
		}
	}
}

// spreadConstraints are the constraints for replicas pods:
//   - over hosts always; enforced (DoNotSchedule, with minDomains) when a non-empty failure
//     tolerance type or the host-spread annotation asks for it and there is more than one
//     node, else best effort (ScheduleAnyway);
//   - over zones, enforced, when there are at least two zones and the failure tolerance type
//     is unset (seed and shoot system components) or "zone"; a "node" tolerance keeps the
//     pods in one zone.
func spreadConstraints(w workload, p policy, replicas, maxReplicas int32, hostSpread, multipleNodes bool) []corev1.TopologySpreadConstraint {
	if replicas <= 1 || w.spreadSelector == nil {
		return nil
	}
	zones := int32(len(p.zones)) // an annotation cannot hold 2^31 zones
	enforceHosts := (hostSpread || ptr.Deref(p.failureToleranceType, "") != "") && multipleNodes
	spreadZones := zones > 1 && (p.failureToleranceType == nil || *p.failureToleranceType == gardencorev1beta1.FailureToleranceTypeZone)

	hosts := corev1.TopologySpreadConstraint{
		TopologyKey:       corev1.LabelHostname,
		MaxSkew:           1,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     w.spreadSelector.DeepCopy(),
	}
	if enforceHosts {
		hosts.WhenUnsatisfiable = corev1.DoNotSchedule
		hosts.MinDomains = new(min(3, maxReplicas))
	}
	constraints := []corev1.TopologySpreadConstraint{hosts}
	if spreadZones {
		constraints = append(constraints, corev1.TopologySpreadConstraint{
			TopologyKey:       corev1.LabelTopologyZone,
			MinDomains:        new(min(zones, maxReplicas)),
			MaxSkew:           1,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     w.spreadSelector.DeepCopy(),
		})
	}
	return constraints
}

// tolerateTaintBasedEvictions adds the configured tolerations for the not-ready and
// unreachable taints unless the template tolerates them for NoExecute already (an empty effect
// tolerates every effect).
// Tolerating them for long keeps pods bound to a lost node; the configured seconds let them
// be evicted and rescheduled sooner than Kubernetes' default of 300 s.
func (h *handler) tolerateTaintBasedEvictions(template *corev1.PodTemplateSpec) {
	var notReady, unreachable bool
	for _, t := range template.Spec.Tolerations {
		if t.Effect != "" && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		switch t.Key {
		case corev1.TaintNodeNotReady:
			notReady = true
		case corev1.TaintNodeUnreachable:
			unreachable = true
		}
	}
	if !notReady && h.cfg.DefaultNotReadyTolerationSeconds != nil {
		template.Spec.Tolerations = append(template.Spec.Tolerations, evictionToleration(corev1.TaintNodeNotReady, *h.cfg.DefaultNotReadyTolerationSeconds))
	}
	if !unreachable && h.cfg.DefaultUnreachableTolerationSeconds != nil {
		template.Spec.Tolerations = append(template.Spec.Tolerations, evictionToleration(corev1.TaintNodeUnreachable, *h.cfg.DefaultUnreachableTolerationSeconds))
	}
}

func evictionToleration(taint string, seconds int64) corev1.Toleration {
	return corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(seconds)}
}
