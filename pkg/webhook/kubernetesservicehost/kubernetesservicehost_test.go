package kubernetesservicehost

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{
				{Name: "plain"},
				{Name: "other-env", Env: []corev1.EnvVar{{Name: "FOO", Value: "bar"}}},
				{Name: "own-host", Env: []corev1.EnvVar{{Name: EnvVar, Value: "mine"}}},
			},
		},
	}
}

func TestInjectsIntoEveryContainerThatLacksIt(t *testing.T) {
	out := &corev1.Pod{}
	webhooktest.Mutate(t, Handler("api.example.com"), webhooktest.Request(t, admissionv1.Create, pod(), nil), out)
	host := corev1.EnvVar{Name: EnvVar, Value: "api.example.com"}
	assert.Equal(t, []corev1.EnvVar{host}, out.Spec.InitContainers[0].Env)
	assert.Equal(t, []corev1.EnvVar{host}, out.Spec.Containers[0].Env)
	assert.Equal(t, []corev1.EnvVar{{Name: "FOO", Value: "bar"}, host}, out.Spec.Containers[1].Env)
	assert.Equal(t, []corev1.EnvVar{{Name: EnvVar, Value: "mine"}}, out.Spec.Containers[2].Env)
}

func TestNoPatchWhenNothingToDo(t *testing.T) {
	p := pod()
	p.Spec.InitContainers = nil
	p.Spec.Containers = p.Spec.Containers[2:]
	resp := webhooktest.Mutate(t, Handler("api.example.com"), webhooktest.Request(t, admissionv1.Create, p, nil), &corev1.Pod{})
	assert.Empty(t, resp.Patches)
}

func FuzzKubernetesServiceHost(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler("api.example.com"), webhooktest.Log),
		webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Create, pod(), nil)))
}

// BenchmarkKubernetesServiceHost measures a typical Pod CREATE through the HTTP handler.
func BenchmarkKubernetesServiceHost(b *testing.B) {
	wh := webhook.Admission(Name, Path, Handler("api.example.com"), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, webhooktest.Request(b, admissionv1.Create, pod(), nil)))
}

// The seed's host comes from the component configuration, the environment overrides it, and
// without one the seed's Pods are left alone (Gardener's seed resource manager runs no such
// webhook).
func TestConfiguredHost(t *testing.T) {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	deps := webhook.Deps{Config: cfg, Log: webhooktest.Log}
	cfg.Webhooks.KubernetesServiceHost = rmv1alpha1.KubernetesServiceHostWebhookConfig{Enabled: true, Host: "api.example.com"}
	assert.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	wh, err := Webhook.New(deps)
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)

	resp := webhooktest.Mutate(t, Handler(""), webhooktest.Request(t, admissionv1.Create, pod(), nil), &corev1.Pod{})
	assert.Empty(t, resp.Patches, "no host, nothing injected")
}

// Each tenant's Pods get their own shoot's API server host; the webhook applies to a tenant only
// while its shoot advertises one and has workers.
func TestTenantsGetTheirOwnHost(t *testing.T) {
	for _, host := range []string{"api.a.p.internal.example.com", "api.b.p.internal.example.com"} {
		ctx := tenant.WithSettings(context.Background(), &tenant.Settings{KubernetesServiceHost: host})
		out := &corev1.Pod{}
		webhooktest.MutateIn(t, ctx, Handler("api.seed.example.com"), webhooktest.Request(t, admissionv1.Create, pod(), nil), out)
		assert.Equal(t, []corev1.EnvVar{{Name: EnvVar, Value: host}}, out.Spec.Containers[0].Env)
	}
	assert.True(t, Webhook.AppliesTo(&tenant.Settings{KubernetesServiceHost: "api.a"}))
	assert.False(t, Webhook.AppliesTo(&tenant.Settings{}), "nothing advertised yet")
	assert.False(t, Webhook.AppliesTo(&tenant.Settings{KubernetesServiceHost: "api.a", Workerless: true}))
}
