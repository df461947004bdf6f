// Package criticalcomponents is GRM's node critical components controller as a reconciler of
// the node function: it removes the taint node.gardener.cloud/critical-components-not-ready from
// a Node of the target once every node-critical DaemonSet that should run there has a pod on it,
// every node-critical pod on it is ready, and every CSI driver those pods wait for is registered
// in the Node's CSINode. This file holds Gardener's rules as pure decisions.
package criticalcomponents

import (
	"slices"
	"sort"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Taint is the taint kubelet registers shoot worker Nodes with.
const Taint = v1beta1constants.TaintNodeCriticalComponentsNotReady

// CriticalSelector selects node-critical pods and DaemonSets (in kube-system, as Gardener lists them).
const CriticalSelector = v1beta1constants.LabelNodeCriticalComponent + "=true"

// HasTaint says whether the Node still carries the taint.
func HasTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == Taint })
}

// RemoveTaint drops every taint with the key, keeping the others in their order.
func RemoveTaint(node *corev1.Node) {
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == Taint })
	if len(node.Spec.Taints) == 0 {
		node.Spec.Taints = nil
	}
}

// Blockers is what keeps the taint on a Node; empty when nothing does.
type Blockers struct {
	// UnscheduledDaemonSets should run on the Node but have no pod there yet.
	UnscheduledDaemonSets []types.NamespacedName
	// UnreadyPods are the node-critical pods on the Node that are not ready.
	UnreadyPods []types.NamespacedName
	// MissingDrivers are the CSI drivers the pods wait for that the CSINode does not list, sorted.
	MissingDrivers []string
}

// None says that nothing blocks: the taint goes.
func (b Blockers) None() bool {
	return len(b.UnscheduledDaemonSets) == 0 && len(b.UnreadyPods) == 0 && len(b.MissingDrivers) == 0
}

// Decide is Gardener's check of a tainted Node: daemonSets are the node-critical DaemonSets of
// kube-system, pods the node-critical pods of kube-system on the Node, csiNode the Node's CSINode
// (nil when there is none).
func Decide(node *corev1.Node, daemonSets []appsv1.DaemonSet, pods []corev1.Pod, csiNode *storagev1.CSINode) Blockers {
	return Blockers{
		UnscheduledDaemonSets: UnscheduledDaemonSets(node, daemonSets, pods),
		UnreadyPods:           UnreadyPods(pods),
		MissingDrivers:        MissingDrivers(RequiredDrivers(pods), csiNode),
	}
}

var daemonSetGVK = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// UnscheduledDaemonSets are the DaemonSets (whose pod template is node-critical) that should run
// on the Node and have no pod among pods (by the pods' controller reference).
func UnscheduledDaemonSets(node *corev1.Node, daemonSets []appsv1.DaemonSet, pods []corev1.Pod) []types.NamespacedName {
	scheduled := map[types.UID]bool{}
	for i := range pods {
		ref := metav1.GetControllerOf(&pods[i])
		if ref != nil && schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind) == daemonSetGVK {
			scheduled[ref.UID] = true
		}
	}
	var unscheduled []types.NamespacedName
	for i := range daemonSets {
		ds := &daemonSets[i]
		if ds.Spec.Template.Labels[v1beta1constants.LabelNodeCriticalComponent] != "true" || !ShouldRunDaemonPod(node, ds) {
			continue
		}
		if !scheduled[ds.UID] {
			unscheduled = append(unscheduled, types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name})
		}
	}
	return unscheduled
}

// UnreadyPods are the pods whose Ready condition is not True.
func UnreadyPods(pods []corev1.Pod) []types.NamespacedName {
	var unready []types.NamespacedName
	for i := range pods {
		if !PodReady(&pods[i]) {
			unready = append(unready, types.NamespacedName{Namespace: pods[i].Namespace, Name: pods[i].Name})
		}
	}
	return unready
}

// PodReady says whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RequiredDrivers are the CSI drivers the pods wait for: the values of their annotations
// node.gardener.cloud/wait-for-csi-node-<name>.
func RequiredDrivers(pods []corev1.Pod) map[string]bool {
	required := map[string]bool{}
	for i := range pods {
		for key, value := range pods[i].Annotations {
			if strings.HasPrefix(key, v1beta1constants.AnnotationPrefixWaitForCSINode) {
				required[value] = true
			}
		}
	}
	return required
}

// MissingDrivers are the required drivers the CSINode (nil: none) does not list, sorted.
func MissingDrivers(required map[string]bool, csiNode *storagev1.CSINode) []string {
	existing := map[string]bool{}
	if csiNode != nil {
		for _, d := range csiNode.Spec.Drivers {
			existing[d.Name] = true
		}
	}
	var missing []string
	for driver := range required {
		if !existing[driver] {
			missing = append(missing, driver)
		}
	}
	sort.Strings(missing)
	return missing
}

// ShouldRunDaemonPod is the DaemonSet controller's decision whether a daemon pod should run on
// the Node (its "shouldRun"), as Gardener applies it: the template's node name, node selector and
// required node affinity must fit the Node, and the template's tolerations, with those the
// DaemonSet controller adds to every daemon pod, must tolerate each NoSchedule and NoExecute
// taint of the Node (this controller's own taint included).
func ShouldRunDaemonPod(node *corev1.Node, ds *appsv1.DaemonSet) bool {
	spec := &ds.Spec.Template.Spec
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false
	}
	if !fitsNodeAffinity(spec, node) {
		return false
	}
	tolerations := append(slices.Clone(spec.Tolerations), daemonTolerations(spec.HostNetwork)...)
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool {
			// Comparison operators (Lt, Gt) are behind an alpha feature gate, off by default.
			return t.ToleratesTaint(klog.Background(), taint, false)
		}) {
			return false
		}
	}
	return true
}

// daemonTolerations are the tolerations the DaemonSet controller adds to every daemon pod.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	tolerations := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		tolerations = append(tolerations, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return tolerations
}

// fitsNodeAffinity is the scheduler's required node affinity: the node selector's labels, and
// then, when set, one of the required node selector terms (a term that cannot be parsed matches
// nothing; empty terms are ignored, so a selector of only empty terms matches no Node).
func fitsNodeAffinity(spec *corev1.PodSpec, node *corev1.Node) bool {
	if len(spec.NodeSelector) > 0 && !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	nodeFields := fields.Set{}
	if node.Name != "" {
		nodeFields["metadata.name"] = node.Name
	}
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		if termMatches(term, labels.Set(node.Labels), nodeFields) {
			return true
		}
	}
	return false
}

func termMatches(term corev1.NodeSelectorTerm, nodeLabels labels.Set, nodeFields fields.Set) bool {
	if len(term.MatchExpressions) > 0 {
		selector, ok := labelSelector(term.MatchExpressions)
		if !ok || !selector.Matches(nodeLabels) {
			return false
		}
	}
	if len(term.MatchFields) > 0 {
		selector, ok := fieldSelector(term.MatchFields)
		// The scheduler skips the fields of a Node without a name.
		if !ok || (len(nodeFields) > 0 && !selector.Matches(nodeFields)) {
			return false
		}
	}
	return true
}

var labelOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

// labelSelector is the selector of match expressions; false when one does not parse.
func labelSelector(exprs []corev1.NodeSelectorRequirement) (labels.Selector, bool) {
	selector := labels.NewSelector()
	for _, expr := range exprs {
		op, ok := labelOperators[expr.Operator]
		if !ok {
			return nil, false
		}
		r, err := labels.NewRequirement(expr.Key, op, expr.Values)
		if err != nil {
			return nil, false
		}
		selector = selector.Add(*r)
	}
	return selector, true
}

// fieldSelector is the selector of match fields (In and NotIn of exactly one value); false when
// one does not parse.
func fieldSelector(exprs []corev1.NodeSelectorRequirement) (fields.Selector, bool) {
	var selectors []fields.Selector
	for _, expr := range exprs {
		if len(expr.Values) != 1 {
			return nil, false
		}
		switch expr.Operator {
		case corev1.NodeSelectorOpIn:
			selectors = append(selectors, fields.OneTermEqualSelector(expr.Key, expr.Values[0]))
		case corev1.NodeSelectorOpNotIn:
			selectors = append(selectors, fields.OneTermNotEqualSelector(expr.Key, expr.Values[0]))
		default:
			return nil, false
		}
	}
	return fields.AndSelectors(selectors...), true
}
