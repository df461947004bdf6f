package samples

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Webhooks follows GRM's webhooks at work in shoots that differ: the same Pod, created (as a
// dry run) in each shoot, is admitted with that shoot's own answers (its API server host, its
// scheduler, its system components' tolerations and node selector, its topology spread), as
// gardenlet configures each shoot's resource manager.
type Webhooks struct {
	// Shoots are the shoots' clients, by tenant.
	Shoots map[tenant.Name]client.Client
}

// webhookSampleAccount is the ServiceAccount of the sample Pod (projected-token-mount reads it).
const webhookSampleAccount = "webhook-demo"

// WebhookSamplePod is a kube-system Pod of a Deployment's revision that gardener manages: every
// Pod webhook of a shoot's resource manager matches it.
func WebhookSamplePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "webhook-demo", Labels: map[string]string{
			"resources.gardener.cloud/managed-by": "gardener", "app": "webhook-demo", "pod-template-hash": "5d9c7b",
		}},
		Spec: corev1.PodSpec{
			ServiceAccountName: webhookSampleAccount,
			Containers:         []corev1.Container{{Name: "demo", Image: "busybox"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "webhook-demo"}},
			}},
		},
	}
}

// Line is one line per shoot: the sample Pod as its kube-apiserver admitted it.
func (w *Webhooks) Line() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tenants := make([]string, 0, len(w.Shoots))
	for t := range w.Shoots {
		tenants = append(tenants, string(t))
	}
	sort.Strings(tenants)
	lines := make([]string, 0, len(tenants))
	for _, t := range tenants {
		lines = append(lines, "GRM webhooks: Pod in "+t+": "+admitted(ctx, w.Shoots[tenant.Name(t)]))
	}
	return strings.Join(lines, "\n")
}

// admitted creates the sample Pod as a dry run and tells what the webhooks made of it.
func admitted(ctx context.Context, shoot client.Client) string {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: webhookSampleAccount}, AutomountServiceAccountToken: new(false)}
	if err := shoot.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "… (" + err.Error() + ")"
	}
	pod := WebhookSamplePod()
	if err := shoot.Create(ctx, pod, client.DryRunAll); err != nil {
		return "… (" + err.Error() + ")"
	}
	host := "none"
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "KUBERNETES_SERVICE_HOST" {
			host = e.Value
		}
	}
	var tolerations []string
	for _, t := range pod.Spec.Tolerations {
		if !strings.HasPrefix(t.Key, "node.kubernetes.io/") { // the kube-apiserver's defaults
			tolerations = append(tolerations, t.Key)
		}
	}
	projected := false
	for _, v := range pod.Spec.Volumes {
		projected = projected || strings.HasPrefix(v.Name, "kube-api-access")
	}
	_, spread := pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels["pod-template-hash"]
	return fmt.Sprintf("KUBERNETES_SERVICE_HOST=%s, scheduler %s, tolerations %v, node selector %v, token projected %t, spread per revision %t ✓",
		host, pod.Spec.SchedulerName, tolerations, pod.Spec.NodeSelector, projected, spread)
}
