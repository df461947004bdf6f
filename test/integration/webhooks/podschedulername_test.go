package webhooks_test

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/podschedulername"
)

const binPackingScheduler = "bin-packing-scheduler"

// The target plays a shoot with the bin-packing scheduling profile.
func init() {
	register(podschedulername.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.PodSchedulerName.Enabled = true
		c.Webhooks.PodSchedulerName.SchedulerName = ptr.To(binPackingScheduler)
	})
}

// schedulerPod creates a pod naming schedulerName (the API server defaults none to
// default-scheduler before admission) and returns the scheduler it was stored with.
func schedulerPod(t *testing.T, namespace, schedulerName string, labels map[string]string) string {
	t.Helper()
	p := testPod(namespace, "", labels)
	p.GenerateName = "scheduler-name-"
	p.Spec.SchedulerName = schedulerName
	require.NoError(t, target.Client.Create(context.Background(), p))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), p))) })
	return p.Spec.SchedulerName
}

// In a shoot, Gardener's registration matches every namespace and every pod but static pods.
func TestPodSchedulerName(t *testing.T) {
	namespace := targetNamespace(t, nil)
	waitForWebhook(t, func(ctx context.Context) bool {
		p := testPod(namespace, "probe", nil)
		return target.Client.Create(ctx, p, client.DryRunAll) == nil && p.Spec.SchedulerName == binPackingScheduler
	})

	assert.Equal(t, binPackingScheduler, schedulerPod(t, namespace, "", nil), "no scheduler named")
	assert.Equal(t, binPackingScheduler, schedulerPod(t, namespace, corev1.DefaultSchedulerName, nil), "the default scheduler named")
	assert.Equal(t, "my-scheduler", schedulerPod(t, namespace, "my-scheduler", nil), "another scheduler stays")
	assert.Equal(t, binPackingScheduler, schedulerPod(t, metav1.NamespaceSystem, "", nil), "kube-system too")
	assert.Equal(t, corev1.DefaultSchedulerName, schedulerPod(t, namespace, "", map[string]string{"static-pod": "true"}), "static pods stay")
}
