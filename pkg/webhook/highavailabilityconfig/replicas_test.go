package highavailabilityconfig

import (
	"context"
	"net/http"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func overrideReplicas(v string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigReplicas: v}
}

// The table of the spec: component type × failure tolerance type of the Namespace.
func TestReplicasByComponentAndFailureToleranceType(t *testing.T) {
	unset := map[string]string(nil)
	for _, tc := range []struct {
		componentType string
		namespace     map[string]string
		want          int32
	}{
		{"controller", unset, 2},
		{"controller", failureTolerance(""), 1},
		{"controller", failureTolerance("zone"), 2},
		{"controller", failureTolerance("node"), 2},
		{"server", unset, 2},
		{"server", failureTolerance(""), 2},
		{"server", failureTolerance("zone"), 2},
		{"server", failureTolerance("node"), 2},
		// Gardener knows two types; any other counts as a server.
		{"worker", failureTolerance(""), 2},
	} {
		for _, k := range workloadKinds {
			name := k.kind + "/" + tc.componentType + "/"
			if v, ok := tc.namespace[resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType]; ok {
				name += "failure-tolerance-type=" + v
			} else {
				name += "unset"
			}
			t.Run(name, func(t *testing.T) {
				out, _ := review(t, newHandler(t, tc.namespace), k.new(new(int32(1)), typed(tc.componentType), nil))
				assert.Equal(t, new(tc.want), k.replicas(out))
			})
		}
	}
}

func TestReplicas(t *testing.T) {
	for _, tc := range []struct {
		name        string
		namespace   map[string]string
		replicas    *int32
		labels      map[string]string
		annotations map[string]string
		// hpaMax is the maxReplicas of an HPA that scales the workload; 0 is no HPA.
		hpaMax int32
		want   *int32
	}{
		{name: "without component type they stay", replicas: new(int32(5)), want: new(int32(5))},
		{name: "an empty component type is none", replicas: new(int32(5)), labels: typed(""), want: new(int32(5))},
		{name: "without HPA they are set, also downwards", replicas: new(int32(5)), labels: typed("server"), want: new(int32(2))},
		{name: "the annotation overrides the table", namespace: failureTolerance(""), replicas: new(int32(1)), labels: typed("controller"), annotations: overrideReplicas("4"), want: new(int32(4))},
		{name: "the annotation needs a component type", replicas: new(int32(1)), annotations: overrideReplicas("4"), want: new(int32(1))},
		{name: "an empty annotation is none", replicas: new(int32(1)), labels: typed("server"), annotations: overrideReplicas(""), want: new(int32(2))},
		{name: "hibernated (0) stays", replicas: new(int32(0)), labels: typed("server"), want: new(int32(0))},
		{name: "hibernated (0) stays despite the annotation", replicas: new(int32(0)), labels: typed("server"), annotations: overrideReplicas("4"), want: new(int32(0))},
		{name: "unset stays unset", replicas: nil, labels: typed("server"), want: nil},
		{name: "scaled by an HPA below the computed count: raised", replicas: new(int32(1)), labels: typed("server"), hpaMax: 5, want: new(int32(2))},
		{name: "scaled by an HPA above the computed count: stays", replicas: new(int32(5)), labels: typed("server"), hpaMax: 5, want: new(int32(5))},
		{name: "scaled by an HPA at the override: stays", replicas: new(int32(4)), labels: typed("server"), annotations: overrideReplicas("4"), hpaMax: 5, want: new(int32(4))},
		{name: "scaled by an HPA below the override: raised", replicas: new(int32(3)), labels: typed("server"), annotations: overrideReplicas("4"), hpaMax: 5, want: new(int32(4))},
	} {
		for _, k := range workloadKinds {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				var objs []client.Object
				if tc.hpaMax > 0 {
					objs = append(objs, scaling(k.kind, tc.hpaMax))
				}
				h := newHandler(t, tc.namespace, objs...)
				out, _ := review(t, h, k.new(tc.replicas, tc.labels, tc.annotations))
				assert.Equal(t, tc.want, k.replicas(out))
			})
		}
	}
}

// An HPA counts only for the object its scaleTargetRef names: API version, kind and name.
func TestOnlyTheHPAOfTheWorkloadCounts(t *testing.T) {
	for _, k := range workloadKinds {
		otherName, otherKind, otherVersion := scaling(k.kind, 5), scaling(k.kind, 5), scaling(k.kind, 5)
		otherName.Name, otherName.Spec.ScaleTargetRef.Name = "other-name", "other"
		otherKind.Name, otherKind.Spec.ScaleTargetRef.Kind = "other-kind", "ReplicaSet"
		otherVersion.Name, otherVersion.Spec.ScaleTargetRef.APIVersion = "other-version", "apps/v1beta2"
		t.Run(k.kind, func(t *testing.T) {
			out, _ := review(t, newHandler(t, nil, otherName, otherKind, otherVersion), k.new(new(int32(5)), typed("server"), nil))
			assert.Equal(t, new(int32(2)), k.replicas(out), "not scaled by an HPA: set to the computed count")
		})
	}
}

func TestInvalidReplicasAnnotationIsDenied(t *testing.T) {
	for _, v := range []string{"four", "2.5", "3000000000"} {
		t.Run(v, func(t *testing.T) {
			for _, obj := range []client.Object{
				deployment(new(int32(1)), typed("server"), overrideReplicas(v)),
				statefulSet(new(int32(1)), typed("server"), overrideReplicas(v)),
				hpa(new(int32(1)), 3, typed("server"), overrideReplicas(v)),
			} {
				resp := newHandler(t, nil).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, obj, nil))
				assert.False(t, resp.Allowed)
				assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
				assert.Contains(t, resp.Result.Message, resourcesv1alpha1.HighAvailabilityConfigReplicas)
			}
		})
	}
}

func TestHorizontalPodAutoscalers(t *testing.T) {
	zone := failureTolerance("zone")
	for _, tc := range []struct {
		name        string
		namespace   map[string]string
		labels      map[string]string
		annotations map[string]string
		min         *int32
		max         int32
		wantMin     *int32
		wantMax     int32
	}{
		{name: "without component type they stay", namespace: zone, min: new(int32(1)), max: 2, wantMin: new(int32(1)), wantMax: 2},
		{name: "minReplicas raised to the table's count", namespace: zone, labels: typed("controller"), min: new(int32(1)), max: 3, wantMin: new(int32(2)), wantMax: 3},
		{name: "maxReplicas raised with minReplicas", namespace: zone, labels: typed("controller"), min: new(int32(1)), max: 1, wantMin: new(int32(2)), wantMax: 2},
		{name: "without failure tolerance type", labels: typed("server"), min: new(int32(1)), max: 1, wantMin: new(int32(2)), wantMax: 2},
		{name: "empty failure tolerance type: a controller needs 1", namespace: failureTolerance(""), labels: typed("controller"), min: new(int32(1)), max: 1, wantMin: new(int32(1)), wantMax: 1},
		{name: "the annotation overrides the table", namespace: zone, labels: typed("controller"), annotations: overrideReplicas("12"), min: new(int32(1)), max: 2, wantMin: new(int32(12)), wantMax: 12},
		{name: "higher counts stay", namespace: zone, labels: typed("controller"), min: new(int32(12)), max: 16, wantMin: new(int32(12)), wantMax: 16},
		{name: "higher minReplicas stays above the override", namespace: zone, labels: typed("controller"), annotations: overrideReplicas("3"), min: new(int32(4)), max: 6, wantMin: new(int32(4)), wantMax: 6},
		{name: "minReplicas 0 (scale to zero) stays", namespace: zone, labels: typed("controller"), min: new(int32(0)), max: 1, wantMin: new(int32(0)), wantMax: 1},
		{name: "unset minReplicas stays", namespace: zone, labels: typed("controller"), min: nil, max: 1, wantMin: nil, wantMax: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := review(t, newHandler(t, tc.namespace), hpa(tc.min, tc.max, tc.labels, tc.annotations))
			assert.Equal(t, tc.wantMin, out.Spec.MinReplicas)
			assert.Equal(t, tc.wantMax, out.Spec.MaxReplicas)
		})
	}
}
