package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

// The shoot's samples for GRM's node and token invalidator functions, created by the live view
// in the landscape's shoot (which has no kubelet: the view plays it, marking the critical Pod
// ready a while after its creation).
const (
	sampleNode         = "demo-node"
	sampleCriticalPod  = "demo-critical-component"
	sampleNoAutomount  = "demo-no-automount"
	sampleStaticToken  = "demo-no-automount-token"
	criticalPodReadyIn = 15 * time.Second
)

// shootNodes is the live view's line following them.
type shootNodes struct {
	shoot   client.Client
	created time.Time
}

func (s *shootNodes) line() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.created.IsZero() {
		if err := s.create(ctx); err != nil {
			return "GRM node: creating samples in the shoot … (" + err.Error() + ")"
		}
		s.created = time.Now()
	}
	return "GRM node: " + s.taint(ctx) + "\n" + "GRM token invalidator: " + s.token(ctx)
}

func (s *shootNodes) create(ctx context.Context) error {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: sampleNode}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1beta1constants.TaintNodeCriticalComponentsNotReady, Effect: corev1.TaintEffectNoSchedule}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: sampleNode + "-2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: sampleNode + "-3"}},
	}
	objs := []client.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleCriticalPod, Labels: map[string]string{v1beta1constants.LabelNodeCriticalComponent: "true"}},
			Spec:       corev1.PodSpec{NodeName: sampleNode, Containers: []corev1.Container{{Name: "agent", Image: "registry.local/agent:1"}}},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleNoAutomount}, AutomountServiceAccountToken: ptr.To(false)},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: sampleStaticToken, Annotations: map[string]string{corev1.ServiceAccountNameKey: sampleNoAutomount}},
			Type:       corev1.SecretTypeServiceAccountToken,
			Data:       map[string][]byte{corev1.ServiceAccountTokenKey: []byte("a-static-token")},
		},
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for _, obj := range objs {
		if err := client.IgnoreAlreadyExists(s.shoot.Create(ctx, obj)); err != nil {
			return err
		}
	}
	return nil
}

// taint follows the critical-components taint of the sample Node and the delays of all three.
func (s *shootNodes) taint(ctx context.Context) string {
	node := &corev1.Node{}
	if err := s.shoot.Get(ctx, client.ObjectKey{Name: sampleNode}, node); err != nil {
		return "Node " + sampleNode + " …"
	}
	tainted := false
	for _, t := range node.Spec.Taints {
		tainted = tainted || t.Key == v1beta1constants.TaintNodeCriticalComponentsNotReady
	}
	var step string
	switch {
	case !tainted:
		step = "critical component ready → taint removed ✓"
	case time.Since(s.created) < criticalPodReadyIn:
		step = fmt.Sprintf("tainted until its critical component is ready (the view makes it ready in %s)", (criticalPodReadyIn - time.Since(s.created)).Round(time.Second))
	default:
		step = "critical component ready → taint removal …"
		s.markReady(ctx)
	}
	nodes := &corev1.NodeList{}
	var delays []string
	if err := s.shoot.List(ctx, nodes); err == nil {
		for _, n := range nodes.Items {
			if d := n.Annotations[v1beta1constants.AnnotationNodeAgentReconciliationDelay]; d != "" {
				delays = append(delays, n.Name+"="+d)
			}
		}
	}
	if len(delays) == 0 {
		return "Node " + sampleNode + ": " + step + "; reconciliation delays …"
	}
	return "Node " + sampleNode + ": " + step + "; reconciliation delays " + strings.Join(delays, ", ") + " ✓"
}

// markReady plays the kubelet: the critical Pod's Ready condition.
func (s *shootNodes) markReady(ctx context.Context) {
	pod := &corev1.Pod{}
	if err := s.shoot.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: sampleCriticalPod}, pod); err != nil {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	_ = s.shoot.Status().Update(ctx, pod)
}

// token follows the static token of the ServiceAccount that opts out of automounting.
func (s *shootNodes) token(ctx context.Context) string {
	secret := &corev1.Secret{}
	if err := s.shoot.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: sampleStaticToken}, secret); err != nil {
		return "static token of kube-system/" + sampleNoAutomount + " …"
	}
	if secret.Labels[tokeninvalidator.LabelConsider] != "true" {
		return "static token of kube-system/" + sampleNoAutomount + " (automountServiceAccountToken: false) …"
	}
	return "static token of kube-system/" + sampleNoAutomount + " (automountServiceAccountToken: false) labelled for the token-invalidator webhook ✓ (the webhook is served by grm-webhooks on a cluster; here no kube-apiserver calls it)"
}
