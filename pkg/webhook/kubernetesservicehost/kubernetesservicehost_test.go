package kubernetesservicehost

import (
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
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

// The host comes from the component configuration, the environment overrides it, and the
// server does not start without one: Pods would get an empty variable.
func TestConstructorNeedsAHost(t *testing.T) {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	deps := webhook.Deps{Config: cfg, Log: webhooktest.Log}
	_, err := Webhook.New(deps)
	assert.Error(t, err)

	cfg.Webhooks.KubernetesServiceHost = rmv1alpha1.KubernetesServiceHostWebhookConfig{Enabled: true, Host: "api.example.com"}
	assert.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	wh, err := Webhook.New(deps)
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)

	cfg.Webhooks.KubernetesServiceHost.Host = ""
	t.Setenv("KUBERNETES_SERVICE_HOST_WEBHOOK_HOST", "api.from.env")
	_, err = Webhook.New(deps)
	assert.NoError(t, err)
}
