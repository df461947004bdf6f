package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHorizontallyScaled(t *testing.T) {
	hpa := func(namespace, apiVersion, kind, name string) autoscalingv1.HorizontalPodAutoscaler {
		return autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hpa"},
			Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}},
		}
	}
	targets, err := NewScaleTargets([]autoscalingv1.HorizontalPodAutoscaler{
		hpa("shoot", "apps/v1", "Deployment", "kube-apiserver"),
		hpa("shoot", "extensions/v1beta1", "Deployment", "legacy"),
		hpa("", "apps/v1", "StatefulSet", "in-default"),
	})
	require.NoError(t, err)

	tests := []struct {
		name     string
		manifest string
		want     bool
	}{
		{"direct target", `{apiVersion: apps/v1, kind: Deployment, metadata: {namespace: shoot, name: kube-apiserver}}`, true},
		{"any version of the group", `{apiVersion: apps/v1beta2, kind: Deployment, metadata: {namespace: shoot, name: kube-apiserver}}`, true},
		{"through an equivalent group", `{apiVersion: apps/v1, kind: Deployment, metadata: {namespace: shoot, name: legacy}}`, true},
		{"empty namespaces are default", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: in-default}}`, true},
		{"other namespace", `{apiVersion: apps/v1, kind: Deployment, metadata: {namespace: garden, name: kube-apiserver}}`, false},
		{"other kind", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {namespace: shoot, name: kube-apiserver}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, HorizontallyScaled(object(t, tt.manifest), targets, NewEquivalences()))
		})
	}

	_, err = NewScaleTargets([]autoscalingv1.HorizontalPodAutoscaler{hpa("shoot", "a/b/c", "Deployment", "x")})
	assert.EqualError(t, err, "invalid API version in scaleTargetReference of HorizontalPodAutoscaler 'shoot/hpa': unexpected GroupVersion string: a/b/c")
}
