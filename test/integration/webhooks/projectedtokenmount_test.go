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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// The component configuration leaves expirationSeconds unset: the 12h default is served.
func init() {
	register(projectedtokenmount.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.ProjectedTokenMount.Enabled = true
	})
}

// tokenServiceAccount creates a ServiceAccount with the given automountServiceAccountToken in
// the target until the test ends and returns its name. kube-system is shared with the other
// tests: names are generated.
func tokenServiceAccount(t *testing.T, namespace string, automount *bool) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "token-mount-", Namespace: namespace}, AutomountServiceAccountToken: automount}
	require.NoError(t, target.Client.Create(context.Background(), sa))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), sa)) })
	return sa.Name
}

// tokenPod is a pod of the ServiceAccount with an init container and two containers.
func tokenPod(namespace, serviceAccount string, labels map[string]string) *corev1.Pod {
	p := testPod(namespace, "", labels)
	p.GenerateName = "token-mount-"
	p.Spec.ServiceAccountName = serviceAccount
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
	return p
}

// createTokenPod creates p in the target until the test ends.
func createTokenPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	require.NoError(t, target.Client.Create(context.Background(), p))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), p))) })
}

// tokenExpiration returns the expiration of the injected token volume as stored, or 0 when
// the pod has none; it checks that every container mounts it.
func tokenExpiration(t *testing.T, p *corev1.Pod) int64 {
	t.Helper()
	stored := &corev1.Pod{}
	require.NoError(t, target.Client.Get(context.Background(), client.ObjectKeyFromObject(p), stored))
	for _, v := range stored.Spec.Volumes {
		if v.Name != projectedtokenmount.VolumeName {
			continue
		}
		mount := corev1.VolumeMount{Name: projectedtokenmount.VolumeName, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}
		for _, c := range append(stored.Spec.InitContainers, stored.Spec.Containers...) {
			assert.Contains(t, c.VolumeMounts, mount, "container %s", c.Name)
		}
		require.NotNil(t, v.Projected)
		require.Len(t, v.Projected.Sources, 3)
		assert.Equal(t, "kube-root-ca.crt", v.Projected.Sources[1].ConfigMap.Name)
		assert.Equal(t, "metadata.namespace", v.Projected.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath)
		return *v.Projected.Sources[0].ServiceAccountToken.ExpirationSeconds
	}
	for _, c := range append(stored.Spec.InitContainers, stored.Spec.Containers...) {
		assert.Empty(t, c.VolumeMounts, "container %s", c.Name)
	}
	return 0
}

func probeProjectedTokenMount(namespace, serviceAccount string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		p := tokenPod(namespace, serviceAccount, nil)
		if target.Client.Create(ctx, p, client.DryRunAll) != nil {
			return false
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == projectedtokenmount.VolumeName {
				return true
			}
		}
		return false
	}
}

// In a shoot, Gardener's registration matches kube-system and kubernetes-dashboard.
func TestProjectedTokenMountInShoot(t *testing.T) {
	ctx := context.Background()
	ns := metav1.NamespaceSystem
	noAutomount := tokenServiceAccount(t, ns, ptrTo(false))

	t.Run("mounted with the default expiration", func(t *testing.T) {
		p := tokenPod(ns, noAutomount, nil)
		createTokenPod(t, p)
		assert.Equal(t, int64(43200), tokenExpiration(t, p))
	})

	t.Run("the pod's annotation sets the expiration", func(t *testing.T) {
		p := tokenPod(ns, noAutomount, nil)
		p.Annotations = map[string]string{resourcesv1alpha1.ProjectedTokenExpirationSeconds: "3600"}
		createTokenPod(t, p)
		assert.Equal(t, int64(3600), tokenExpiration(t, p))
	})

	t.Run("an unparsable expiration is rejected", func(t *testing.T) {
		p := tokenPod(ns, noAutomount, nil)
		p.Annotations = map[string]string{resourcesv1alpha1.ProjectedTokenExpirationSeconds: "12h"}
		err := target.Client.Create(ctx, p)
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403 Forbidden as Gardener answers, got %v", err)
		assert.Contains(t, err.Error(), `strconv.ParseInt: parsing "12h": invalid syntax`)
	})

	t.Run("a missing ServiceAccount is rejected as not found", func(t *testing.T) {
		err := target.Client.Create(ctx, tokenPod(ns, "token-mount-does-not-exist", nil))
		require.Error(t, err)
		assert.True(t, apierrors.IsNotFound(err), "want 404 NotFound as Gardener answers, got %v", err)
		assert.Contains(t, err.Error(), `serviceaccounts "token-mount-does-not-exist" not found`)
	})

	// Gardener reads the ServiceAccount before looking at the Pod's own opt-outs.
	t.Run("a missing ServiceAccount is rejected even if the pod refuses a token", func(t *testing.T) {
		p := tokenPod(ns, "token-mount-does-not-exist", nil)
		p.Spec.AutomountServiceAccountToken = ptrTo(false)
		err := target.Client.Create(ctx, p)
		assert.True(t, apierrors.IsNotFound(err), "want 404 NotFound, got %v", err)
	})

	for name, tc := range map[string]struct {
		serviceAccount string
		labels         map[string]string
		change         func(*corev1.Pod)
	}{
		"skip label":                     {serviceAccount: noAutomount, labels: map[string]string{resourcesv1alpha1.ProjectedTokenSkip: "true"}},
		"GRM's own pods":                 {serviceAccount: noAutomount, labels: map[string]string{v1beta1constants.LabelApp: "gardener-resource-manager"}},
		"static pods":                    {serviceAccount: noAutomount, labels: map[string]string{"static-pod": "true"}},
		"no ServiceAccount":              {},
		"the default ServiceAccount":     {serviceAccount: "default"},
		"ServiceAccount automounts":      {serviceAccount: tokenServiceAccount(t, ns, ptrTo(true))},
		"ServiceAccount leaves it unset": {serviceAccount: tokenServiceAccount(t, ns, nil)},
		"the pod refuses a token": {serviceAccount: noAutomount, change: func(p *corev1.Pod) {
			p.Spec.AutomountServiceAccountToken = ptrTo(false)
		}},
		"the pod has a kube-api-access- volume": {serviceAccount: noAutomount, change: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-own", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}},
	} {
		t.Run("untouched: "+name, func(t *testing.T) {
			p := tokenPod(ns, tc.serviceAccount, tc.labels)
			if tc.change != nil {
				tc.change(p)
			}
			createTokenPod(t, p)
			assert.Zero(t, tokenExpiration(t, p))
		})
	}

	t.Run("untouched: other namespaces", func(t *testing.T) {
		other := targetNamespace(t, nil)
		p := tokenPod(other, tokenServiceAccount(t, other, ptrTo(false)), nil)
		createTokenPod(t, p)
		assert.Zero(t, tokenExpiration(t, p))
	})
}

// In the seed, Gardener's registration matches namespaces labelled gardener.cloud/role.
func TestProjectedTokenMountInSeed(t *testing.T) {
	ns := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
	noAutomount := tokenServiceAccount(t, ns, ptrTo(false))
	installRegistration(t, "seed/webhook-projected-token-mount.yaml", "-seed", probeProjectedTokenMount(ns, noAutomount))

	p := tokenPod(ns, noAutomount, nil)
	createTokenPod(t, p)
	assert.Equal(t, int64(43200), tokenExpiration(t, p))

	skipped := tokenPod(ns, noAutomount, map[string]string{resourcesv1alpha1.ProjectedTokenSkip: "true"})
	createTokenPod(t, skipped)
	assert.Zero(t, tokenExpiration(t, skipped))

	other := targetNamespace(t, nil)
	elsewhere := tokenPod(other, tokenServiceAccount(t, other, ptrTo(false)), nil)
	createTokenPod(t, elsewhere)
	assert.Zero(t, tokenExpiration(t, elsewhere))
}
