package podtopologyspreadconstraints

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const hash = "123abc"

func pod(labels map[string]string, constraints ...corev1.TopologySpreadConstraint) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-123abc-xyz", Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                []corev1.Container{{Name: "main", Image: "busybox"}},
			TopologySpreadConstraints: constraints,
		},
	}
}

func revisionLabels() map[string]string {
	return map[string]string{"app": "web", "pod-template-hash": hash}
}

func constraint(key string, selector *metav1.LabelSelector, matchLabelKeys ...string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{TopologyKey: key, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector, MatchLabelKeys: matchLabelKeys}
}

func labels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func review(t *testing.T, p *corev1.Pod) (*corev1.Pod, int) {
	t.Helper()
	out := &corev1.Pod{}
	resp := webhooktest.Mutate(t, Handler(), webhooktest.Request(t, admissionv1.Create, p, nil), out)
	return out, len(resp.Patches)
}

func TestEveryConstraintSelectsTheRevision(t *testing.T) {
	notIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"old"}}}}
	out, _ := review(t, pod(revisionLabels(),
		constraint(corev1.LabelTopologyZone, nil),
		constraint(corev1.LabelHostname, labels("app", "web")),
		constraint("rack", labels("app", "web"), "pod-template-hash", "tier"),
		constraint("row", notIn),
	))
	wantNotIn := notIn.DeepCopy()
	wantNotIn.MatchLabels = map[string]string{"pod-template-hash": hash}
	assert.Equal(t, []corev1.TopologySpreadConstraint{
		constraint(corev1.LabelTopologyZone, labels("pod-template-hash", hash)),
		constraint(corev1.LabelHostname, labels("app", "web", "pod-template-hash", hash)),
		constraint("rack", labels("app", "web", "pod-template-hash", hash), "tier"),
		constraint("row", wantNotIn),
	}, out.Spec.TopologySpreadConstraints)
}

// A constraint that selects on pod-template-hash already (a label or an In expression) is
// left as it is, matchLabelKeys included.
func TestConstraintsSelectingTheRevisionStay(t *testing.T) {
	in := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{hash}}}}
	p := pod(revisionLabels(),
		constraint(corev1.LabelTopologyZone, labels("app", "web", "pod-template-hash", hash)),
		constraint(corev1.LabelHostname, labels("pod-template-hash", "other")),
		constraint("rack", in, "pod-template-hash"),
	)
	out, patches := review(t, p)
	assert.Zero(t, patches)
	assert.Equal(t, p.Spec.TopologySpreadConstraints, out.Spec.TopologySpreadConstraints)
}

func TestPodsNotOfADeploymentStay(t *testing.T) {
	_, patches := review(t, pod(map[string]string{"app": "web"}, constraint(corev1.LabelTopologyZone, labels("app", "web"), "pod-template-hash")))
	assert.Zero(t, patches)
}

func TestPodsWithoutConstraintsStay(t *testing.T) {
	_, patches := review(t, pod(revisionLabels()))
	assert.Zero(t, patches)
}

// The label's presence counts, not its value (as for matchLabelKeys).
func TestEmptyHashIsSelected(t *testing.T) {
	out, _ := review(t, pod(map[string]string{"pod-template-hash": ""}, constraint(corev1.LabelTopologyZone, nil)))
	assert.Equal(t, labels("pod-template-hash", ""), out.Spec.TopologySpreadConstraints[0].LabelSelector)
}

func typicalRequest(t testing.TB) admission.Request {
	return webhooktest.Request(t, admissionv1.Create, pod(revisionLabels(),
		constraint(corev1.LabelHostname, labels("app", "web"), "pod-template-hash"),
		constraint(corev1.LabelTopologyZone, labels("app", "web"), "pod-template-hash"),
	), nil)
}

func BenchmarkPodTopologySpreadConstraints(b *testing.B) {
	h, req, ctx := Handler(), typicalRequest(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("not mutated: %+v", resp.Result)
		}
	}
}

func FuzzPodTopologySpreadConstraints(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(), webhooktest.Log), webhooktest.AdmissionReview(f, typicalRequest(f)))
}
