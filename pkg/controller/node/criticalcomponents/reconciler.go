package criticalcomponents

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// PodNodeName is the field the Node's pods are listed by (served by the API server, and indexed
// by the sweep).
const PodNodeName = "spec.nodeName"

// Reconciler removes the taint of one Node of the target once its node-critical components are
// ready. It keeps no backoff of its own: a Node that is not ready yet is checked again by the next
// event of its pods or CSINode, or by the next sweep.
type Reconciler struct {
	Target function.ClusterClient
	Log    *slog.Logger
}

// Reconcile reads the Node, and when it is tainted its node-critical DaemonSets and pods (and its
// CSINode when those pods wait for CSI drivers), and removes the taint when nothing blocks.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	node := &corev1.Node{}
	if err := req.Reader.Get(ctx, req.Key, node); err != nil {
		return err
	}
	// Another party may have removed the taint since the event or the sweep's list.
	if !HasTaint(node) {
		return nil
	}
	critical := client.MatchingLabels{v1beta1constants.LabelNodeCriticalComponent: "true"}
	daemonSets := &appsv1.DaemonSetList{}
	if err := req.Reader.List(ctx, daemonSets, client.InNamespace(metav1.NamespaceSystem), critical); err != nil {
		return fmt.Errorf("failed listing node-critical DaemonSets on node: %w", err)
	}
	pods := &corev1.PodList{}
	if err := req.Reader.List(ctx, pods, client.InNamespace(metav1.NamespaceSystem), critical, client.MatchingFields{PodNodeName: node.Name}); err != nil {
		return fmt.Errorf("failed listing node-critical Pods on node: %w", err)
	}
	var csiNode *storagev1.CSINode
	// The CSINode matters only when a pod waits for a driver; per specification it has the
	// Node's name.
	if len(RequiredDrivers(pods.Items)) > 0 {
		csiNode = &storagev1.CSINode{}
		err := req.Reader.Get(ctx, client.ObjectKey{Name: node.Name}, csiNode)
		switch {
		case apierrors.IsNotFound(err):
			csiNode = nil
		case err != nil:
			return fmt.Errorf("failed getting existing drivers from CSINode object for node: %w", err)
		}
	}
	if blockers := Decide(node, daemonSets.Items, pods.Items, csiNode); !blockers.None() {
		r.Log.Debug("node-critical components not ready, checking again on their next change or sweep", "node", node.Name,
			"unscheduledDaemonSets", blockers.UnscheduledDaemonSets, "unreadyPods", blockers.UnreadyPods, "missingDrivers", blockers.MissingDrivers)
		return nil
	}
	// Conditional on the version read: a Node changed since (another taint, a sweep's stale
	// copy) is a conflict, and the runtime decides again from live state.
	if _, err := r.Target.Writer.Patch(ctx, node, func() { RemoveTaint(node) }); err != nil {
		return err
	}
	r.Log.Info("All node-critical components got ready, removing taint", "node", node.Name)
	return nil
}

// ProjectPod is what a sweep keeps of a node-critical pod: what Decide reads (its key, the
// critical label the reconciler lists by, the CSI annotations, its controller and its Ready
// condition). Its node name is indexed before.
func ProjectPod(obj client.Object) client.Object {
	pod := obj.(*corev1.Pod)
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		Labels: map[string]string{v1beta1constants.LabelNodeCriticalComponent: pod.Labels[v1beta1constants.LabelNodeCriticalComponent]},
	}}
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, v1beta1constants.AnnotationPrefixWaitForCSINode) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[key] = value
		}
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out
}

// IndexPodNodeName indexes pods by the Node they are on.
func IndexPodNodeName(obj client.Object) []string {
	if name := obj.(*corev1.Pod).Spec.NodeName; name != "" {
		return []string{name}
	}
	return nil
}
