package webhooks_test

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/seccompprofile"
)

func init() {
	register(seccompprofile.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.SeccompProfile.Enabled = true
	})
}

// seccompPod creates a pod with the given pod security context and returns the stored one.
func seccompPod(t *testing.T, namespace string, labels map[string]string, securityContext *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	t.Helper()
	p := testPod(namespace, "", labels)
	p.GenerateName = "seccomp-"
	p.Spec.SecurityContext = securityContext
	require.NoError(t, target.Client.Create(context.Background(), p))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), p))) })
	return p.Spec.SecurityContext
}

// The seed's registration (the only one Gardener has, behind a feature gate that is off by
// default: so it is opt-in, in config/seed-opt-in/): namespaces labelled gardener.cloud/role.
func TestSeccompProfile(t *testing.T) {
	namespace := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
	installRegistration(t, "seed-opt-in/webhook-seccomp-profile.yaml", "-seed", func(ctx context.Context) bool {
		p := testPod(namespace, "probe", nil)
		return target.Client.Create(ctx, p, client.DryRunAll) == nil && p.Spec.SecurityContext != nil && p.Spec.SecurityContext.SeccompProfile != nil
	})
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}

	assert.Equal(t, &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}, seccompPod(t, namespace, nil, nil), "no security context")
	assert.Equal(t, &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: runtimeDefault},
		seccompPod(t, namespace, nil, &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), "no profile")
	unconfined := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
	assert.Equal(t, unconfined, seccompPod(t, namespace, nil, unconfined.DeepCopy()), "a pod's own profile stays")

	for name, labels := range map[string]map[string]string{
		"skipped":        {resourcesv1alpha1.SeccompProfileSkip: ""},
		"GRM's own pods": {v1beta1constants.LabelApp: "gardener-resource-manager"},
		"static pods":    {"static-pod": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			sc := seccompPod(t, namespace, labels, nil)
			assert.True(t, sc == nil || sc.SeccompProfile == nil, "not defaulted: %+v", sc)
		})
	}
	t.Run("namespaces not Gardener's", func(t *testing.T) {
		sc := seccompPod(t, targetNamespace(t, nil), nil, nil)
		assert.True(t, sc == nil || sc.SeccompProfile == nil, "not defaulted: %+v", sc)
	})
}
