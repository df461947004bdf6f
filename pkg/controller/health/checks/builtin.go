package checks

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The messages below are compared verbatim with gardener-resource-manager's: they end up in the
// ResourcesHealthy and ResourcesProgressing conditions that users and Gardener's own care
// controllers read.

func conditionMissing(conditionType string) error {
	return fmt.Errorf("condition %q is missing", conditionType)
}

// wrongConditionStatus returns nil when actual is the wanted status, else the error naming the
// condition's reason and message, which usually tell why.
func wrongConditionStatus(conditionType, want, actual, reason, message string) error {
	if want == actual {
		return nil
	}
	return fmt.Errorf("condition %q has invalid status %s (expected %s) due to %s: %s", conditionType, actual, want, reason, message)
}

func generationOutdated(observed, generation int64) string {
	return fmt.Sprintf("observed generation outdated (%d/%d)", observed, generation)
}

func replicasNotUpdated(updated, desired int32) string {
	return fmt.Sprintf("%d of %d replica(s) have been updated", updated, desired)
}

// firstCondition finds the first entry of conditions whose type is t: only the first counts
// when a list holds a type twice.
func firstCondition[C any](conditions []C, t string, typeOf func(C) string) *C {
	for i := range conditions {
		if typeOf(conditions[i]) == t {
			return &conditions[i]
		}
	}
	return nil
}

// CheckCustomResourceDefinition requires NamesAccepted and Established to be True and a
// Terminating condition, if any, to be False: only then are the CRD's custom resources served.
func CheckCustomResourceDefinition(crd *apiextensionsv1.CustomResourceDefinition) error {
	typeOf := func(c apiextensionsv1.CustomResourceDefinitionCondition) string { return string(c.Type) }
	for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		c := firstCondition(crd.Status.Conditions, string(t), typeOf)
		if c == nil {
			return conditionMissing(string(t))
		}
		if err := wrongConditionStatus(string(t), string(corev1.ConditionTrue), string(c.Status), c.Reason, c.Message); err != nil {
			return err
		}
	}
	if c := firstCondition(crd.Status.Conditions, string(apiextensionsv1.Terminating), typeOf); c != nil {
		return wrongConditionStatus(string(c.Type), string(corev1.ConditionFalse), string(c.Status), c.Reason, c.Message)
	}
	return nil
}

// CheckDaemonSet requires the controller to have seen the current generation, every node that
// should run a pod to run one and no pod to run where it should not; while a rollout is under
// way, as many pods may be unavailable as the rolling update allows, otherwise none.
func CheckDaemonSet(ds *appsv1.DaemonSet) error {
	s := ds.Status
	if s.ObservedGeneration < ds.Generation {
		return errors.New(generationOutdated(s.ObservedGeneration, ds.Generation))
	}
	if s.CurrentNumberScheduled < s.DesiredNumberScheduled {
		return fmt.Errorf("not enough scheduled pods (%d/%d)", s.CurrentNumberScheduled, s.DesiredNumberScheduled)
	}
	if s.NumberMisscheduled > 0 {
		return fmt.Errorf("misscheduled pods found (%d)", s.NumberMisscheduled)
	}
	if s.UpdatedNumberScheduled < s.DesiredNumberScheduled {
		if allowed := daemonSetUnavailableAllowance(ds); int(s.NumberUnavailable) > allowed {
			return fmt.Errorf("too many unavailable pods found (%d/%d, only max. %d unavailable pods allowed)", s.NumberUnavailable, s.CurrentNumberScheduled, allowed)
		}
		return nil
	}
	if s.NumberUnavailable > 0 {
		return fmt.Errorf("too many unavailable pods found (%d/%d)", s.NumberUnavailable, s.CurrentNumberScheduled)
	}
	return nil
}

// daemonSetUnavailableAllowance is the rolling update's maxUnavailable scaled to the desired
// pods (rounded down); any other strategy, or a value that does not parse, allows none.
func daemonSetUnavailableAllowance(ds *appsv1.DaemonSet) int {
	desired := int(ds.Status.DesiredNumberScheduled)
	if desired == 0 || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable, desired, false)
	if err != nil {
		return 0
	}
	return allowed
}

// DaemonSetProgressing reports a DaemonSet whose controller has not seen the current generation
// or has not yet updated the pod of every node.
func DaemonSetProgressing(ds *appsv1.DaemonSet) (bool, string) {
	if ds.Status.ObservedGeneration < ds.Generation {
		return true, generationOutdated(ds.Status.ObservedGeneration, ds.Generation)
	}
	if ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled {
		return true, replicasNotUpdated(ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
	}
	return false, "DaemonSet is fully rolled out"
}

// CheckDeployment requires the controller to have seen the current generation, Available to be
// True, and, where present, Progressing to be True and ReplicaFailure to be False. Progressing
// True includes a rollout under way: rollouts are ResourcesProgressing's business.
func CheckDeployment(d *appsv1.Deployment) error {
	if d.Status.ObservedGeneration < d.Generation {
		return errors.New(generationOutdated(d.Status.ObservedGeneration, d.Generation))
	}
	typeOf := func(c appsv1.DeploymentCondition) string { return string(c.Type) }
	available := firstCondition(d.Status.Conditions, string(appsv1.DeploymentAvailable), typeOf)
	if available == nil {
		return conditionMissing(string(appsv1.DeploymentAvailable))
	}
	for _, want := range []struct {
		condition *appsv1.DeploymentCondition
		status    corev1.ConditionStatus
	}{
		{available, corev1.ConditionTrue},
		{firstCondition(d.Status.Conditions, string(appsv1.DeploymentProgressing), typeOf), corev1.ConditionTrue},
		{firstCondition(d.Status.Conditions, string(appsv1.DeploymentReplicaFailure), typeOf), corev1.ConditionFalse},
	} {
		if c := want.condition; c != nil {
			if err := wrongConditionStatus(string(c.Type), string(want.status), string(c.Status), c.Reason, c.Message); err != nil {
				return err
			}
		}
	}
	return nil
}

// deploymentRolledOutReason is the Progressing reason with which the Deployment controller
// declares the newest ReplicaSet available: the only state that counts as rolled out.
const deploymentRolledOutReason = "NewReplicaSetAvailable"

// DeploymentProgressing reports a Deployment whose controller has not seen the current
// generation or whose Progressing condition is not True/NewReplicaSetAvailable; the description
// is then the condition's message. A Deployment that is not progressing may still have pods of
// older ReplicaSets: see DeploymentHasExactPodCount.
func DeploymentProgressing(d *appsv1.Deployment) (bool, string) {
	if d.Status.ObservedGeneration < d.Generation {
		return true, generationOutdated(d.Status.ObservedGeneration, d.Generation)
	}
	c := firstCondition(d.Status.Conditions, string(appsv1.DeploymentProgressing), func(c appsv1.DeploymentCondition) string { return string(c.Type) })
	if c == nil {
		return true, conditionMissing(string(appsv1.DeploymentProgressing)).Error()
	}
	if c.Status != corev1.ConditionTrue || c.Reason != deploymentRolledOutReason {
		return true, c.Message
	}
	return false, "Deployment is fully rolled out"
}

// PodForCounting is what DeploymentHasExactPodCount and the selection by labels read of a Pod
// (a sweep's projection, List.Project): its key and labels, its phase, reason and conditions.
func PodForCounting(obj client.Object) client.Object {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj
	}
	counted := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels, ResourceVersion: pod.ResourceVersion}}
	counted.Status.Phase, counted.Status.Reason = pod.Status.Phase, pod.Status.Reason
	for _, c := range pod.Status.Conditions {
		counted.Status.Conditions = append(counted.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return counted
}

// DeploymentHasExactPodCount tells whether pods (those of the Deployment's selector) count
// exactly .spec.replicas (default 1) that are neither finished, evicted or otherwise stale,
// nor disrupted. Pods being deleted still count: while an old ReplicaSet's pods terminate, the
// Deployment's status already claims to be rolled out.
func DeploymentHasExactPodCount(d *appsv1.Deployment, pods []corev1.Pod) bool {
	var live int32
	for i := range pods {
		s := &pods[i].Status
		if podTerminal(s.Phase) || podStale(s.Reason) || podCompleted(s.Conditions) || podDisrupted(s.Conditions) {
			continue
		}
		live++
	}
	return live == ptr.Deref(d.Spec.Replicas, 1)
}

func podTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// podStale recognises the reasons the kubelet and node lifecycle give pods that will not run
// again on their node.
func podStale(reason string) bool {
	return strings.HasPrefix(reason, "OutOf") || slices.ContainsFunc([]string{"Evicted", "NodeAffinity", "NodeLost", "Preempting"}, func(marker string) bool {
		return strings.Contains(reason, marker)
	})
}

func podCompleted(conditions []corev1.PodCondition) bool {
	return slices.ContainsFunc(conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason == "PodCompleted"
	})
}

func podDisrupted(conditions []corev1.PodCondition) bool {
	return slices.ContainsFunc(conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	})
}

// CheckJob fails a Job only once it has failed: a Job still running is healthy.
func CheckJob(job *batchv1.Job) error {
	c := firstCondition(job.Status.Conditions, string(batchv1.JobFailed), func(c batchv1.JobCondition) string { return string(c.Type) })
	if c == nil {
		return nil
	}
	return wrongConditionStatus(string(c.Type), string(corev1.ConditionFalse), string(c.Status), c.Reason, c.Message)
}

// healthyPodPhases are the phases of a Pod that runs or ran to success; readiness is not
// required.
var healthyPodPhases = []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded}

// CheckPod requires the Pod to be Running or Succeeded.
func CheckPod(pod *corev1.Pod) error {
	if slices.Contains(healthyPodPhases, pod.Status.Phase) {
		return nil
	}
	return fmt.Errorf("pod is in invalid phase %q (expected one of %q)", pod.Status.Phase, healthyPodPhases)
}

// CheckReplicaSet requires the controller to have seen the current generation and as many
// ready replicas as .spec.replicas, when set.
func CheckReplicaSet(rs *appsv1.ReplicaSet) error {
	if rs.Status.ObservedGeneration < rs.Generation {
		return errors.New(generationOutdated(rs.Status.ObservedGeneration, rs.Generation))
	}
	if rs.Spec.Replicas != nil && rs.Status.ReadyReplicas < *rs.Spec.Replicas {
		return errors.New("ReplicaSet does not have minimum availability")
	}
	return nil
}

// CheckReplicationController is CheckReplicaSet for the ReplicationController.
func CheckReplicationController(rc *corev1.ReplicationController) error {
	if rc.Status.ObservedGeneration < rc.Generation {
		return errors.New(generationOutdated(rc.Status.ObservedGeneration, rc.Generation))
	}
	if rc.Spec.Replicas != nil && rc.Status.ReadyReplicas < *rc.Spec.Replicas {
		return errors.New("ReplicationController does not have minimum availability")
	}
	return nil
}

// CheckService fails only a LoadBalancer Service that has no ingress yet: its load balancer has
// not been provisioned.
func CheckService(svc *corev1.Service) error {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) > 0 {
		return nil
	}
	return errors.New("service is missing ingress status")
}

// CheckStatefulSet requires the controller to have seen the current generation and as many
// ready replicas as .spec.replicas (default 1).
func CheckStatefulSet(sts *appsv1.StatefulSet) error {
	if sts.Status.ObservedGeneration < sts.Generation {
		return errors.New(generationOutdated(sts.Status.ObservedGeneration, sts.Generation))
	}
	if replicas := ptr.Deref(sts.Spec.Replicas, 1); sts.Status.ReadyReplicas < replicas {
		return fmt.Errorf("not enough ready replicas (%d/%d)", sts.Status.ReadyReplicas, replicas)
	}
	return nil
}

// StatefulSetProgressing reports a StatefulSet whose controller has not seen the current
// generation or has updated fewer replicas than .spec.replicas (default 1).
func StatefulSetProgressing(sts *appsv1.StatefulSet) (bool, string) {
	if sts.Status.ObservedGeneration < sts.Generation {
		return true, generationOutdated(sts.Status.ObservedGeneration, sts.Generation)
	}
	if desired := ptr.Deref(sts.Spec.Replicas, 1); sts.Status.UpdatedReplicas < desired {
		return true, replicasNotUpdated(sts.Status.UpdatedReplicas, desired)
	}
	return false, "StatefulSet is fully rolled out"
}
