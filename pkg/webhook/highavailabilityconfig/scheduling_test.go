package highavailabilityconfig

import (
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func zones(v string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigZones: v}
}

func zonePinning(v string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigZonePinning: v}
}

func zoneRequirement(values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func requiredTerms(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func term(requirements ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: requirements}
}

func TestZonePinning(t *testing.T) {
	pinned := requiredTerms(term(zoneRequirement("a", "b", "c")))
	for _, tc := range []struct {
		name      string
		namespace map[string]string
		want      *corev1.Affinity
	}{
		{name: "neither failure tolerance type nor zones", want: nil},
		{name: "failure tolerance type without zones", namespace: failureTolerance("zone"), want: nil},
		{name: "failure tolerance type with empty zones", namespace: merge(failureTolerance("zone"), zones("")), want: nil},
		{name: "failure tolerance type with only commas as zones", namespace: merge(failureTolerance("zone"), zones(",,")), want: nil},
		{name: "failure tolerance type and zones", namespace: merge(failureTolerance("node"), zones("a,b,c")), want: pinned},
		{name: "an empty failure tolerance type is set", namespace: merge(failureTolerance(""), zones("a,b,c")), want: pinned},
		{name: "zones alone", namespace: zones("a,b,c"), want: nil},
		{name: "zones with zone pinning", namespace: merge(zones("a,b,c"), zonePinning("true")), want: pinned},
		{name: "zones with zone pinning off", namespace: merge(zones("a,b,c"), zonePinning("false")), want: nil},
		{name: "zones with unparsable zone pinning", namespace: merge(zones("a,b,c"), zonePinning("enabled")), want: nil},
		{name: "zones are distinct, non-empty and sorted", namespace: merge(failureTolerance("zone"), zones("c,a,,b,a")), want: pinned},
		{name: "a single zone", namespace: merge(failureTolerance("zone"), zones("a")), want: requiredTerms(term(zoneRequirement("a")))},
	} {
		for _, k := range workloadKinds {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				out, _ := review(t, newHandler(t, tc.namespace), k.new(new(int32(1)), nil, nil))
				assert.Equal(t, tc.want, k.template(out).Spec.Affinity)
			})
		}
	}
}

// Node selector terms are ORed: the zones go into every term, replacing what a term said
// about zones, next to its other requirements.
func TestZonePinningGoesIntoEveryTerm(t *testing.T) {
	hostname := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpExists}
	foo := corev1.NodeSelectorRequirement{Key: "foo", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"bar"}}
	otherZones := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"some", "other"}}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: term(foo)}}
	d := deployment(new(int32(1)), nil, nil)
	d.Spec.Template.Spec.Affinity = requiredTerms(term(hostname), term(otherZones), term(foo, zoneRequirement("x")))
	d.Spec.Template.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = preferred
	d.Spec.Template.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}

	out, _ := review(t, newHandler(t, merge(failureTolerance("zone"), zones("a,b"))), d)
	want := requiredTerms(term(hostname, zoneRequirement("a", "b")), term(zoneRequirement("a", "b")), term(foo, zoneRequirement("a", "b")))
	want.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = preferred
	want.PodAntiAffinity = &corev1.PodAntiAffinity{}
	assert.Equal(t, want, out.Spec.Template.Spec.Affinity)
}

func TestZonePinningAlreadyInPlaceIsNoChange(t *testing.T) {
	d := deployment(new(int32(1)), nil, nil)
	hostname := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpExists}
	d.Spec.Template.Spec.Affinity = requiredTerms(term(hostname, zoneRequirement("a", "b")), term(zoneRequirement("a", "b")))
	_, resp := review(t, newHandlerWith(t, rmv1alpha1.HighAvailabilityConfigWebhookConfig{}, merge(failureTolerance("zone"), zones("b,a"))), d)
	assert.Empty(t, resp.Patches)
}

// spreadOver completes the constraints as the webhook makes them for the kind: a Deployment's
// select its pod labels per revision (pod-template-hash), a StatefulSet's select with its
// selector.
func spreadOver(k workloadKind, in ...corev1.TopologySpreadConstraint) []corev1.TopologySpreadConstraint {
	constraints := make([]corev1.TopologySpreadConstraint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&constraints[i])
	}
	for i := range constraints {
		if constraints[i].TopologyKey != corev1.LabelHostname && constraints[i].TopologyKey != corev1.LabelTopologyZone {
			continue // the template's own
		}
		if k.kind == "Deployment" {
			constraints[i].LabelSelector = &metav1.LabelSelector{MatchLabels: podLabels}
		} else {
			constraints[i].LabelSelector = statefulSetSelector.DeepCopy()
		}
	}
	if k.kind == "Deployment" {
		for i := range constraints {
			constraints[i].MatchLabelKeys = append(constraints[i].MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey)
		}
	}
	return constraints
}

func hosts(when corev1.UnsatisfiableConstraintAction, minDomains *int32) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelHostname, MaxSkew: 1, WhenUnsatisfiable: when, MinDomains: minDomains}
}

func zoneSpread(minDomains int32) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: new(minDomains)}
}

func TestTopologySpreadConstraints(t *testing.T) {
	var (
		bestEffort = hosts(corev1.ScheduleAnyway, nil)
		threeZones = zones("a,b,c")
		hostSpread = map[string]string{resourcesv1alpha1.HighAvailabilityConfigHostSpread: "true"}
	)
	for _, tc := range []struct {
		name        string
		namespace   map[string]string
		replicas    int32
		annotations map[string]string
		nodes       int
		// hpaMax is the maxReplicas of an HPA that scales the workload; 0 is no HPA.
		hpaMax int32
		want   []corev1.TopologySpreadConstraint
	}{
		{name: "one replica: none", namespace: merge(failureTolerance("zone"), threeZones), replicas: 1, nodes: 3, want: nil},
		{name: "no zones, no failure tolerance: best effort over hosts", replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "empty failure tolerance type: best effort over hosts", namespace: failureTolerance(""), replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "failure tolerance type: enforced over hosts", namespace: failureTolerance("node"), replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(2)))}},
		{name: "minDomains is at most 3", namespace: failureTolerance("node"), replicas: 5, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(3)))}},
		{name: "a single node is never enforced", namespace: failureTolerance("node"), replicas: 2, nodes: 1, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "no node is never enforced", namespace: failureTolerance("node"), replicas: 2, nodes: 0, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "host-spread annotation: enforced over hosts", replicas: 2, annotations: hostSpread, nodes: 2, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(2)))}},
		{name: "host-spread annotation on a single node", replicas: 2, annotations: hostSpread, nodes: 1, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "host-spread annotation false", namespace: failureTolerance(""), replicas: 2, annotations: map[string]string{resourcesv1alpha1.HighAvailabilityConfigHostSpread: "false"}, nodes: 2, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "host-spread annotation unparsable", replicas: 2, annotations: map[string]string{resourcesv1alpha1.HighAvailabilityConfigHostSpread: "yes"}, nodes: 2, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "one zone: hosts only", namespace: merge(failureTolerance("zone"), zones("a")), replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(2)))}},
		{name: "three zones, no failure tolerance: over zones", namespace: threeZones, replicas: 2, nodes: 1, want: []corev1.TopologySpreadConstraint{bestEffort, zoneSpread(2)}},
		{name: "three zones, zone failure tolerance: enforced over hosts and zones", namespace: merge(failureTolerance("zone"), threeZones), replicas: 3, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(3))), zoneSpread(3)}},
		{name: "zone minDomains is at most the zones", namespace: merge(failureTolerance("zone"), zones("a,b")), replicas: 4, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(3))), zoneSpread(2)}},
		{name: "three zones, node failure tolerance: hosts only", namespace: merge(failureTolerance("node"), threeZones), replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(2)))}},
		{name: "three zones, empty failure tolerance: hosts only", namespace: merge(failureTolerance(""), threeZones), replicas: 2, nodes: 3, want: []corev1.TopologySpreadConstraint{bestEffort}},
		{name: "minDomains from the HPA's maxReplicas", namespace: merge(failureTolerance("zone"), threeZones), replicas: 2, nodes: 3, hpaMax: 6, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(3))), zoneSpread(3)}},
		{name: "minDomains bounded by the HPA's maxReplicas", namespace: merge(failureTolerance("zone"), threeZones), replicas: 2, nodes: 3, hpaMax: 2, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(2))), zoneSpread(2)}},
		{name: "replicas above the HPA's maxReplicas count", namespace: merge(failureTolerance("zone"), threeZones), replicas: 3, nodes: 3, hpaMax: 2, want: []corev1.TopologySpreadConstraint{hosts(corev1.DoNotSchedule, new(int32(3))), zoneSpread(3)}},
	} {
		for _, k := range workloadKinds {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				objs := nodes(tc.nodes)
				if tc.hpaMax > 0 {
					objs = append(objs, scaling(k.kind, tc.hpaMax))
				}
				// Without component type the replicas stay as they are.
				out, _ := review(t, newHandler(t, tc.namespace, objs...), k.new(new(tc.replicas), nil, tc.annotations))
				if tc.want == nil {
					assert.Empty(t, k.template(out).Spec.TopologySpreadConstraints)
					return
				}
				assert.Equal(t, spreadOver(k, tc.want...), k.template(out).Spec.TopologySpreadConstraints)
			})
		}
	}
}

// The spread follows the replicas as mutated: a controller raised to 2 is spread.
func TestSpreadFollowsMutatedReplicas(t *testing.T) {
	for _, k := range workloadKinds {
		t.Run(k.kind, func(t *testing.T) {
			out, _ := review(t, newHandler(t, failureTolerance("zone"), nodes(2)...), k.new(new(int32(1)), typed("controller"), nil))
			assert.Equal(t, spreadOver(k, hosts(corev1.DoNotSchedule, new(int32(2)))), k.template(out).Spec.TopologySpreadConstraints)
		})
	}
}

func withConstraints(k workloadKind, replicas int32, constraints ...corev1.TopologySpreadConstraint) client.Object {
	obj := k.new(new(replicas), nil, nil)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Template.Spec.TopologySpreadConstraints = constraints
	case *appsv1.StatefulSet:
		o.Spec.Template.Spec.TopologySpreadConstraints = constraints
	}
	return obj
}

// The template's own constraints over hosts and zones are replaced; others stay.
func TestOwnConstraintsOverHostsAndZonesAreReplaced(t *testing.T) {
	own := corev1.TopologySpreadConstraint{TopologyKey: "some-key", MaxSkew: 12, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	for _, k := range workloadKinds {
		t.Run(k.kind, func(t *testing.T) {
			obj := withConstraints(k, 2,
				own,
				corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelHostname, MaxSkew: 34, WhenUnsatisfiable: corev1.DoNotSchedule},
				corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 56, WhenUnsatisfiable: corev1.ScheduleAnyway},
			)
			out, _ := review(t, newHandler(t, zones("a,b,c")), obj)
			assert.Equal(t, spreadOver(k, own, hosts(corev1.ScheduleAnyway, nil), zoneSpread(2)), k.template(out).Spec.TopologySpreadConstraints)
		})
	}
}

// A Deployment's own constraints are spread per revision too, even when the webhook adds
// none; pod-template-hash is not added twice.
func TestDeploymentConstraintsArePerRevision(t *testing.T) {
	own := corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MatchLabelKeys: []string{"tier"}}
	already := corev1.TopologySpreadConstraint{TopologyKey: "rack", MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MatchLabelKeys: []string{appsv1.DefaultDeploymentUniqueLabelKey}}
	out, _ := review(t, newHandler(t, nil), withConstraints(workloadKinds[0], 1, own, already).(*appsv1.Deployment))
	own.MatchLabelKeys = append(own.MatchLabelKeys, appsv1.DefaultDeploymentUniqueLabelKey)
	assert.Equal(t, []corev1.TopologySpreadConstraint{own, already}, out.Spec.Template.Spec.TopologySpreadConstraints)

	s, _ := review(t, newHandler(t, nil), withConstraints(workloadKinds[1], 1, own).(*appsv1.StatefulSet))
	assert.Equal(t, []corev1.TopologySpreadConstraint{own}, s.Spec.Template.Spec.TopologySpreadConstraints, "StatefulSets are left alone")
}

// A StatefulSet without selector is invalid (the API server rejects it): it gets no
// constraints, and the webhook does not fail on it.
func TestStatefulSetWithoutSelectorGetsNoConstraints(t *testing.T) {
	s := statefulSet(new(int32(2)), nil, nil)
	s.Spec.Selector = nil
	out, _ := review(t, newHandler(t, failureTolerance("zone"), nodes(2)...), s)
	assert.Empty(t, out.Spec.Template.Spec.TopologySpreadConstraints)
}

func TestTolerations(t *testing.T) {
	notReady := evictionToleration(corev1.TaintNodeNotReady, 60)
	unreachable := evictionToleration(corev1.TaintNodeUnreachable, 120)
	own := func(key string, effect corev1.TaintEffect, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect, TolerationSeconds: seconds}
	}
	other := corev1.Toleration{Key: "foo", Operator: corev1.TolerationOpEqual, Value: "bar", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		cfg  rmv1alpha1.HighAvailabilityConfigWebhookConfig
		own  []corev1.Toleration
		want []corev1.Toleration
	}{
		{name: "none: both added", cfg: testConfig, want: []corev1.Toleration{notReady, unreachable}},
		{name: "others stay", cfg: testConfig, own: []corev1.Toleration{other, own("foo", corev1.TaintEffectNoExecute, new(int64(15)))},
			want: []corev1.Toleration{other, own("foo", corev1.TaintEffectNoExecute, new(int64(15))), notReady, unreachable}},
		{name: "NoSchedule does not tolerate eviction", cfg: testConfig,
			own:  []corev1.Toleration{own(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil), own(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, nil)},
			want: []corev1.Toleration{own(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil), own(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, nil), notReady, unreachable}},
		{name: "not-ready tolerated: only unreachable added", cfg: testConfig,
			own:  []corev1.Toleration{own(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, new(int64(300)))},
			want: []corev1.Toleration{own(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, new(int64(300))), unreachable}},
		{name: "unreachable tolerated: only not-ready added", cfg: testConfig,
			own:  []corev1.Toleration{own(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, new(int64(300)))},
			want: []corev1.Toleration{own(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, new(int64(300))), notReady}},
		{name: "an empty effect tolerates eviction", cfg: testConfig,
			own:  []corev1.Toleration{own(corev1.TaintNodeNotReady, "", nil), own(corev1.TaintNodeUnreachable, "", nil)},
			want: []corev1.Toleration{own(corev1.TaintNodeNotReady, "", nil), own(corev1.TaintNodeUnreachable, "", nil)}},
		{name: "not configured: none added", cfg: rmv1alpha1.HighAvailabilityConfigWebhookConfig{Enabled: true}, want: nil},
		{name: "only not-ready configured", cfg: rmv1alpha1.HighAvailabilityConfigWebhookConfig{DefaultNotReadyTolerationSeconds: new(int64(60))}, want: []corev1.Toleration{notReady}},
		{name: "only unreachable configured", cfg: rmv1alpha1.HighAvailabilityConfigWebhookConfig{DefaultUnreachableTolerationSeconds: new(int64(120))}, want: []corev1.Toleration{unreachable}},
	} {
		for _, k := range workloadKinds {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				obj := k.new(new(int32(1)), nil, nil)
				switch o := obj.(type) {
				case *appsv1.Deployment:
					o.Spec.Template.Spec.Tolerations = tc.own
				case *appsv1.StatefulSet:
					o.Spec.Template.Spec.Tolerations = tc.own
				}
				out, _ := review(t, newHandlerWith(t, tc.cfg, nil), obj)
				assert.Equal(t, tc.want, k.template(out).Spec.Tolerations)
			})
		}
	}
}
