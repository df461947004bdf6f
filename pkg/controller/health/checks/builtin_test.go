package checks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// errString is "" for nil, so that tables state the expected message or its absence.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCheckCustomResourceDefinition(t *testing.T) {
	cond := func(t apiextensionsv1.CustomResourceDefinitionConditionType, s apiextensionsv1.ConditionStatus) apiextensionsv1.CustomResourceDefinitionCondition {
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: s, Reason: "R", Message: "M"}
	}
	names, established := cond(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue), cond(apiextensionsv1.Established, apiextensionsv1.ConditionTrue)
	for _, tc := range []struct {
		name       string
		conditions []apiextensionsv1.CustomResourceDefinitionCondition
		want       string
	}{
		{"healthy", []apiextensionsv1.CustomResourceDefinitionCondition{names, established}, ""},
		{"terminating false is healthy", []apiextensionsv1.CustomResourceDefinitionCondition{names, established, cond(apiextensionsv1.Terminating, apiextensionsv1.ConditionFalse)}, ""},
		{"no conditions", nil, `condition "NamesAccepted" is missing`},
		{"established missing", []apiextensionsv1.CustomResourceDefinitionCondition{names}, `condition "Established" is missing`},
		{"names not accepted", []apiextensionsv1.CustomResourceDefinitionCondition{cond(apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse), established},
			`condition "NamesAccepted" has invalid status False (expected True) due to R: M`},
		{"not established", []apiextensionsv1.CustomResourceDefinitionCondition{names, cond(apiextensionsv1.Established, apiextensionsv1.ConditionUnknown)},
			`condition "Established" has invalid status Unknown (expected True) due to R: M`},
		{"terminating", []apiextensionsv1.CustomResourceDefinitionCondition{names, established, cond(apiextensionsv1.Terminating, apiextensionsv1.ConditionTrue)},
			`condition "Terminating" has invalid status True (expected False) due to R: M`},
		{"first of a duplicated type counts", []apiextensionsv1.CustomResourceDefinitionCondition{names, cond(apiextensionsv1.Established, apiextensionsv1.ConditionFalse), established},
			`condition "Established" has invalid status False (expected True) due to R: M`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: tc.conditions}}
			assert.Equal(t, tc.want, errString(CheckCustomResourceDefinition(crd)))
		})
	}
}

func TestDaemonSet(t *testing.T) {
	rolling := func(maxUnavailable intstr.IntOrString) appsv1.DaemonSetUpdateStrategy {
		return appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable}}
	}
	for _, tc := range []struct {
		name            string
		generation      int64
		strategy        appsv1.DaemonSetUpdateStrategy
		status          appsv1.DaemonSetStatus
		wantHealth      string
		wantProgressing string
	}{
		{name: "healthy", generation: 2, status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3}},
		{name: "generation outdated", generation: 2, status: appsv1.DaemonSetStatus{ObservedGeneration: 1},
			wantHealth: "observed generation outdated (1/2)", wantProgressing: "observed generation outdated (1/2)"},
		{name: "not enough scheduled", status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, UpdatedNumberScheduled: 3},
			wantHealth: "not enough scheduled pods (2/3)"},
		{name: "misscheduled", status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberMisscheduled: 1},
			wantHealth: "misscheduled pods found (1)"},
		{name: "unavailable after rollout", status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberUnavailable: 1},
			wantHealth: "too many unavailable pods found (1/3)"},
		{name: "rollout within maxUnavailable", strategy: rolling(intstr.FromInt32(2)),
			status:          appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberUnavailable: 2},
			wantProgressing: "1 of 3 replica(s) have been updated"},
		{name: "rollout beyond maxUnavailable", strategy: rolling(intstr.FromInt32(1)),
			status:          appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberUnavailable: 2},
			wantHealth:      "too many unavailable pods found (2/3, only max. 1 unavailable pods allowed)",
			wantProgressing: "1 of 3 replica(s) have been updated"},
		{name: "percentage rounds down", strategy: rolling(intstr.FromString("50%")),
			status:          appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberUnavailable: 2},
			wantHealth:      "too many unavailable pods found (2/3, only max. 1 unavailable pods allowed)",
			wantProgressing: "1 of 3 replica(s) have been updated"},
		{name: "unparsable maxUnavailable allows none", strategy: rolling(intstr.FromString("many")),
			status:          appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 2, NumberUnavailable: 1},
			wantHealth:      "too many unavailable pods found (1/3, only max. 0 unavailable pods allowed)",
			wantProgressing: "2 of 3 replica(s) have been updated"},
		{name: "OnDelete allows none", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			status:          appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 2, NumberUnavailable: 1},
			wantHealth:      "too many unavailable pods found (1/3, only max. 0 unavailable pods allowed)",
			wantProgressing: "2 of 3 replica(s) have been updated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}, Spec: appsv1.DaemonSetSpec{UpdateStrategy: tc.strategy}, Status: tc.status}
			assert.Equal(t, tc.wantHealth, errString(CheckDaemonSet(ds)))
			progressing, description := DaemonSetProgressing(ds)
			assert.Equal(t, tc.wantProgressing != "", progressing)
			if progressing {
				assert.Equal(t, tc.wantProgressing, description)
			} else {
				assert.Equal(t, "DaemonSet is fully rolled out", description)
			}
		})
	}
}

func deploymentCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: "msg of " + reason}
}

func TestDeployment(t *testing.T) {
	available := deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable")
	rolledOut := deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable")
	for _, tc := range []struct {
		name            string
		generation      int64
		observed        int64
		conditions      []appsv1.DeploymentCondition
		wantHealth      string
		wantProgressing string
	}{
		{name: "healthy and rolled out", conditions: []appsv1.DeploymentCondition{available, rolledOut}},
		{name: "generation outdated", generation: 3, observed: 2, conditions: []appsv1.DeploymentCondition{available, rolledOut},
			wantHealth: "observed generation outdated (2/3)", wantProgressing: "observed generation outdated (2/3)"},
		{name: "available missing", conditions: []appsv1.DeploymentCondition{rolledOut}, wantHealth: `condition "Available" is missing`},
		{name: "not available", conditions: []appsv1.DeploymentCondition{deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable"), rolledOut},
			wantHealth: `condition "Available" has invalid status False (expected True) due to MinimumReplicasUnavailable: msg of MinimumReplicasUnavailable`},
		{name: "progressing missing is healthy but progressing", conditions: []appsv1.DeploymentCondition{available},
			wantProgressing: `condition "Progressing" is missing`},
		{name: "rollout under way is healthy", conditions: []appsv1.DeploymentCondition{available, deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated")},
			wantProgressing: "msg of ReplicaSetUpdated"},
		{name: "deadline exceeded", conditions: []appsv1.DeploymentCondition{available, deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded")},
			wantHealth:      `condition "Progressing" has invalid status False (expected True) due to ProgressDeadlineExceeded: msg of ProgressDeadlineExceeded`,
			wantProgressing: "msg of ProgressDeadlineExceeded"},
		{name: "replica failure", conditions: []appsv1.DeploymentCondition{available, rolledOut, deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate")},
			wantHealth: `condition "ReplicaFailure" has invalid status True (expected False) due to FailedCreate: msg of FailedCreate`},
		{name: "replica failure resolved", conditions: []appsv1.DeploymentCondition{available, rolledOut, deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionFalse, "Resolved")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}, Status: appsv1.DeploymentStatus{ObservedGeneration: tc.observed, Conditions: tc.conditions}}
			assert.Equal(t, tc.wantHealth, errString(CheckDeployment(d)))
			progressing, description := DeploymentProgressing(d)
			assert.Equal(t, tc.wantProgressing != "", progressing)
			if progressing {
				assert.Equal(t, tc.wantProgressing, description)
			}
		})
	}
}

func TestDeploymentHasExactPodCount(t *testing.T) {
	pod := func(phase corev1.PodPhase, reason string, conditions ...corev1.PodCondition) corev1.Pod {
		return corev1.Pod{Status: corev1.PodStatus{Phase: phase, Reason: reason, Conditions: conditions}}
	}
	running := pod(corev1.PodRunning, "")
	terminating := running
	terminating.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		replicas *int32
		pods     []corev1.Pod
		want     bool
	}{
		{"exact", ptr.To[int32](2), []corev1.Pod{running, running}, true},
		{"replicas default to one", nil, []corev1.Pod{running}, true},
		{"scaled to zero without pods", ptr.To[int32](0), nil, true},
		{"too few", ptr.To[int32](2), []corev1.Pod{running}, false},
		{"a terminating old pod counts", ptr.To[int32](1), []corev1.Pod{running, terminating}, false},
		{"pending pods count", ptr.To[int32](1), []corev1.Pod{running, pod(corev1.PodPending, "")}, false},
		{"succeeded and failed pods do not count", ptr.To[int32](1), []corev1.Pod{running, pod(corev1.PodSucceeded, ""), pod(corev1.PodFailed, "")}, true},
		{"evicted pods do not count", ptr.To[int32](1), []corev1.Pod{running, pod(corev1.PodRunning, "Evicted")}, true},
		{"OutOf pods do not count", ptr.To[int32](1), []corev1.Pod{running, pod(corev1.PodPending, "OutOfcpu")}, true},
		{"OutOf only as a prefix", ptr.To[int32](1), []corev1.Pod{running, pod(corev1.PodPending, "RanOutOfcpu")}, false},
		{"NodeAffinity, NodeLost and Preempting pods do not count", ptr.To[int32](1),
			[]corev1.Pod{running, pod(corev1.PodPending, "UnexpectedNodeAffinity"), pod(corev1.PodRunning, "NodeLost"), pod(corev1.PodRunning, "Preempting")}, true},
		{"completed pods do not count", ptr.To[int32](1),
			[]corev1.Pod{running, pod(corev1.PodRunning, "", corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"})}, true},
		{"merely unready pods count", ptr.To[int32](1),
			[]corev1.Pod{running, pod(corev1.PodRunning, "", corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"})}, false},
		{"disrupted pods do not count", ptr.To[int32](1),
			[]corev1.Pod{running, pod(corev1.PodRunning, "", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})}, true},
		{"a resolved disruption counts", ptr.To[int32](1),
			[]corev1.Pod{running, pod(corev1.PodRunning, "", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: tc.replicas}}
			assert.Equal(t, tc.want, DeploymentHasExactPodCount(d, tc.pods))
			// A sweep holds only PodForCounting's projection: the same answer from it.
			projected := make([]corev1.Pod, 0, len(tc.pods))
			for i := range tc.pods {
				projected = append(projected, *PodForCounting(&tc.pods[i]).(*corev1.Pod))
			}
			assert.Equal(t, tc.want, DeploymentHasExactPodCount(d, projected), "from the projection")
		})
	}
}

func TestCheckJob(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []batchv1.JobCondition
		want       string
	}{
		{"running", nil, ""},
		{"complete", []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}, ""},
		{"not failed", []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}}, ""},
		{"failed", []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}},
			`condition "Failed" has invalid status True (expected False) due to BackoffLimitExceeded: Job has reached the specified backoff limit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errString(CheckJob(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conditions}})))
		})
	}
}

func TestCheckPod(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]string{
		corev1.PodRunning:   "",
		corev1.PodSucceeded: "",
		corev1.PodPending:   `pod is in invalid phase "Pending" (expected one of ["Running" "Succeeded"])`,
		corev1.PodFailed:    `pod is in invalid phase "Failed" (expected one of ["Running" "Succeeded"])`,
		"":                  `pod is in invalid phase "" (expected one of ["Running" "Succeeded"])`,
	} {
		assert.Equal(t, want, errString(CheckPod(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}})), "phase %q", phase)
	}
}

func TestCheckReplicaSetAndReplicationController(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		generation, observed           int64
		replicas                       *int32
		ready                          int32
		wantReplicaSet, wantController string
	}{
		{name: "ready", replicas: ptr.To[int32](2), ready: 2},
		{name: "replicas unset", ready: 0},
		{name: "generation outdated", generation: 2, observed: 1, wantReplicaSet: "observed generation outdated (1/2)", wantController: "observed generation outdated (1/2)"},
		{name: "not enough ready", replicas: ptr.To[int32](2), ready: 1,
			wantReplicaSet: "ReplicaSet does not have minimum availability", wantController: "ReplicationController does not have minimum availability"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Generation: tc.generation}
			rs := &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: tc.replicas}, Status: appsv1.ReplicaSetStatus{ObservedGeneration: tc.observed, ReadyReplicas: tc.ready}}
			assert.Equal(t, tc.wantReplicaSet, errString(CheckReplicaSet(rs)))
			rc := &corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{Replicas: tc.replicas}, Status: corev1.ReplicationControllerStatus{ObservedGeneration: tc.observed, ReadyReplicas: tc.ready}}
			assert.Equal(t, tc.wantController, errString(CheckReplicationController(rc)))
		})
	}
}

func TestCheckService(t *testing.T) {
	ingress := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}}
	for _, tc := range []struct {
		name    string
		svcType corev1.ServiceType
		lb      corev1.LoadBalancerStatus
		want    string
	}{
		{"cluster IP", corev1.ServiceTypeClusterIP, corev1.LoadBalancerStatus{}, ""},
		{"load balancer with ingress", corev1.ServiceTypeLoadBalancer, ingress, ""},
		{"load balancer without ingress", corev1.ServiceTypeLoadBalancer, corev1.LoadBalancerStatus{}, "service is missing ingress status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: tc.svcType}, Status: corev1.ServiceStatus{LoadBalancer: tc.lb}}
			assert.Equal(t, tc.want, errString(CheckService(svc)))
		})
	}
}

func TestStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		generation, observed int64
		replicas             *int32
		ready, updated       int32
		wantHealth           string
		wantProgressing      string
	}{
		{name: "healthy", replicas: ptr.To[int32](3), ready: 3, updated: 3},
		{name: "replicas default to one", ready: 1, updated: 1},
		{name: "replicas default to one, none ready", wantHealth: "not enough ready replicas (0/1)", wantProgressing: "0 of 1 replica(s) have been updated"},
		{name: "generation outdated", generation: 2, observed: 1, wantHealth: "observed generation outdated (1/2)", wantProgressing: "observed generation outdated (1/2)"},
		{name: "rolling", replicas: ptr.To[int32](3), ready: 3, updated: 1, wantProgressing: "1 of 3 replica(s) have been updated"},
		{name: "not ready", replicas: ptr.To[int32](3), ready: 2, updated: 3, wantHealth: "not enough ready replicas (2/3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}, Spec: appsv1.StatefulSetSpec{Replicas: tc.replicas},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: tc.observed, ReadyReplicas: tc.ready, UpdatedReplicas: tc.updated}}
			assert.Equal(t, tc.wantHealth, errString(CheckStatefulSet(sts)))
			progressing, description := StatefulSetProgressing(sts)
			assert.Equal(t, tc.wantProgressing != "", progressing)
			if progressing {
				assert.Equal(t, tc.wantProgressing, description)
			} else {
				assert.Equal(t, "StatefulSet is fully rolled out", description)
			}
		})
	}
}
