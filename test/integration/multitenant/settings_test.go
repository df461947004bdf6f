package multitenant_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	enrolmentpkg "github.com/gardener-knative/gardener-knative/pkg/enrolment"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// registered are the names of the registrations of ours in the shoot.
func registered(t *testing.T, s *shoot) []string {
	t.Helper()
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	require.NoError(t, s.env.Client.List(context.Background(), list, client.MatchingLabels(tenant.RegistrationLabels)))
	var names []string
	for _, c := range list.Items {
		names = append(names, strings.TrimPrefix(c.Name, "gardener-knative-"))
	}
	sort.Strings(names)
	return names
}

// The enrolment registers with each shoot what gardenlet v1.150 registers for its resource
// manager (the component's getMutatingWebhookConfigurationForShoot with the values of
// DefaultResourceManager): pod-scheduler-name only for the bin-packing profile,
// pod-topology-spread-constraints only with MatchLabelKeysInPodTopologySpread off in both
// components, nothing of Pods and Nodes for a workerless shoot
// (disableControllersAndWebhooksForWorkerlessShoot); the token invalidator, as v1.113 did.
func TestEnrolmentRegistersWhatApplies(t *testing.T) {
	assert.Equal(t, []string{"high-availability-config", "kubernetes-service-host", "projected-token-mount", "system-components-config", "token-invalidator", "vpa-in-place-updates"}, registered(t, shootA))
	assert.Equal(t, []string{"high-availability-config", "kubernetes-service-host", "pod-scheduler-name", "pod-topology-spread-constraints", "projected-token-mount", "system-components-config", "token-invalidator", "vpa-in-place-updates"}, registered(t, shootB))
	assert.Equal(t, []string{"token-invalidator"}, registered(t, shootC))
}

// setCluster replaces the Shoot of the tenant's Cluster.
func setCluster(t *testing.T, s *shoot, shootObject any) {
	t.Helper()
	ctx := context.Background()
	cluster := &extensionsv1alpha1.Cluster{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Name: string(s.tenant)}, cluster))
	raw, err := json.Marshal(shootObject)
	require.NoError(t, err)
	cluster.Spec.Shoot = runtime.RawExtension{Raw: raw}
	require.NoError(t, seed.Client.Update(ctx, cluster))
}

// Enrolling again follows the shoot: a registration that no longer applies goes, one that
// applies again comes back, and an enrolment that changes nothing changes nothing.
func TestEnrolmentFollowsTheShoot(t *testing.T) {
	ctx := context.Background()
	balanced := shootB.object.DeepCopy()
	balanced.Spec.Kubernetes.KubeScheduler.Profile = nil
	setCluster(t, shootB, balanced)
	t.Cleanup(func() {
		setCluster(t, shootB, shootB.object)
		_, err := enrolmentpkg.Enrol(ctx, seed.Client, shootB.tenant, "gardener-knative", enrolment())
		assert.NoError(t, err)
		assert.Contains(t, registered(t, shootB), "pod-scheduler-name")
	})
	result, err := enrolmentpkg.Enrol(ctx, seed.Client, shootB.tenant, "gardener-knative", enrolment())
	require.NoError(t, err)
	assert.Equal(t, []string{"MutatingWebhookConfiguration/gardener-knative-pod-scheduler-name"}, result.Deleted)
	assert.NotContains(t, registered(t, shootB), "pod-scheduler-name")

	before := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, shootB.env.Client.Get(ctx, client.ObjectKey{Name: "gardener-knative-kubernetes-service-host"}, before))
	result, err = enrolmentpkg.Enrol(ctx, seed.Client, shootB.tenant, "gardener-knative", enrolment())
	require.NoError(t, err)
	assert.Empty(t, result.Deleted)
	after := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, shootB.env.Client.Get(ctx, client.ObjectKey{Name: "gardener-knative-kubernetes-service-host"}, after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "a second enrolment writes nothing")
}

// systemPod is a kube-system Pod of a Deployment's revision that gardener manages, with a
// topology spread constraint: every Pod webhook of a shoot's resource manager matches it.
func systemPod(serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, GenerateName: "system-", Labels: map[string]string{
			"resources.gardener.cloud/managed-by": "gardener", "app": "system", "pod-template-hash": "abc123",
		}},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			Containers:         []corev1.Container{{Name: "c", Image: "busybox"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "system"}},
			}},
		},
	}
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The same Pod, created in each shoot, gets what gardenlet's configuration of that shoot's
// resource manager gives it: its own API server host (ComputeOutOfClusterAPIServerAddress), the
// bin-packing scheduler only with that profile (ShootSchedulingProfile), the tolerations of its
// system-components pools (ExtractSystemComponentsTolerations), its revision in the topology
// spread only with matchLabelKeys off (IsMatchLabelKeysInPodTopologySpreadFeatureGateDisabled),
// and nothing at all in a workerless shoot.
func TestEachShootsPodsGetItsOwnAnswers(t *testing.T) {
	type answer struct {
		host, scheduler string
		nodeSelector    map[string]string
		tolerations     []corev1.Toleration
		spreadSelector  map[string]string
	}
	systemComponents := map[string]string{"worker.gardener.cloud/system-components": "true"}
	want := map[*shoot]answer{
		shootA: {host: tenanttest.APIServerHost(shootA.tenant), scheduler: corev1.DefaultSchedulerName, nodeSelector: systemComponents,
			spreadSelector: map[string]string{"app": "system"}},
		shootB: {host: tenanttest.APIServerHost(shootB.tenant), scheduler: tenant.BinPackingSchedulerName, nodeSelector: systemComponents,
			tolerations:    []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}},
			spreadSelector: map[string]string{"app": "system", "pod-template-hash": "abc123"}},
		shootC: {scheduler: corev1.DefaultSchedulerName, spreadSelector: map[string]string{"app": "system"}},
	}
	for _, s := range shoots {
		t.Run(string(s.tenant), func(t *testing.T) {
			serviceAccount(t, s, "system", true)
			var pod *corev1.Pod
			// The kube-apiservers learn of new webhook configurations asynchronously.
			require.Eventually(t, func() bool {
				pod = systemPod("system")
				return s.env.Client.Create(context.Background(), pod, client.DryRunAll) == nil && (s == shootC || envOf(pod.Spec.Containers[0], "KUBERNETES_SERVICE_HOST") != "")
			}, 30*time.Second, 100*time.Millisecond)
			w := want[s]
			var tolerations []corev1.Toleration
			for _, t := range pod.Spec.Tolerations {
				if !strings.HasPrefix(t.Key, "node.kubernetes.io/") { // the kube-apiserver's DefaultTolerationSeconds
					tolerations = append(tolerations, t)
				}
			}
			got := answer{
				host: envOf(pod.Spec.Containers[0], "KUBERNETES_SERVICE_HOST"), scheduler: pod.Spec.SchedulerName, nodeSelector: pod.Spec.NodeSelector,
				tolerations: tolerations, spreadSelector: pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels,
			}
			assert.Equal(t, w, got)
		})
	}
}

// A node agent may list and watch only its own Node's Pods where the shoot's kube-apiserver
// has AuthorizeWithSelectors (A: unset, so on), all Pods where it is off (B); a workerless
// shoot (C) has no node agents and asks no authorizer.
func TestNodeAgentsPodListsFollowTheShootsFeatureGate(t *testing.T) {
	ctx := context.Background()
	for _, s := range shoots {
		runsNode(t, s, "lister", "lister-node")
	}
	listPods := func(s *shoot) authorizationv1.SubjectAccessReviewStatus {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "gardener.cloud:node-agent:machine:lister", Groups: []string{"gardener.cloud:node-agents"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"},
		}}
		require.NoError(t, s.env.Client.Create(ctx, review))
		return review.Status
	}
	a := listPods(shootA)
	assert.False(t, a.Allowed)
	assert.True(t, a.Denied, "%+v", a)
	assert.Contains(t, a.Reason, "can only list/watch pods with spec.nodeName=lister-node field selector")
	assert.True(t, listPods(shootB).Allowed, "B's kube-apiserver has AuthorizeWithSelectors off")
	c := listPods(shootC)
	assert.False(t, c.Allowed)
	assert.False(t, c.Denied, "no authorizer but RBAC: %+v", c)
}

// A tenant the servers cannot resolve gets what the registration's failure policy means,
// through a real kube-apiserver: a fail-closed webhook rejects with the reason, a best-effort
// one is skipped.
func TestUnknownTenantThroughTheShoot(t *testing.T) {
	ctx := context.Background()
	const nowhere tenant.Name = "shoot--test--nowhere"
	register := func(name, path string, policy admissionregistrationv1.FailurePolicyType) {
		u, err := tenantproof.URL("https://x/shoot--p--s"+path, nowhere, proofKey, "https://"+servingAddr())
		require.NoError(t, err)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		require.NoError(t, shootA.env.Client.Create(ctx, ns))
		none := admissionregistrationv1.SideEffectClassNone
		c := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "unknown-tenant-" + name},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:         name + ".unknown-tenant.test",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: serving.LocalServingCAData},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: name}},
				FailurePolicy:           &policy,
				SideEffects:             &none,
				AdmissionReviewVersions: []string{"v1"},
			}},
		}
		require.NoError(t, shootA.env.Client.Create(ctx, c))
		t.Cleanup(func() {
			assert.NoError(t, shootA.env.Client.Delete(context.Background(), c))
			assert.NoError(t, shootA.env.Client.Delete(context.Background(), ns))
		})
	}
	register("fail-closed", "/webhooks/mount-projected-service-account-token", admissionregistrationv1.Fail)
	register("best-effort", "/webhooks/kubernetes-service-host", admissionregistrationv1.Ignore)
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	require.Eventually(t, func() bool {
		err := shootA.env.Client.Create(ctx, pod("fail-closed"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), `unknown tenant "shoot--test--nowhere"`)
	}, 30*time.Second, 100*time.Millisecond, "a fail-closed webhook rejects with the reason")
	assert.NoError(t, shootA.env.Client.Create(ctx, pod("best-effort"), client.DryRunAll), "a best-effort webhook is skipped")
}

// Unenrolling hands a shoot back to gardenlet's own resource manager: our registrations leave
// its shoot, its Cluster loses the label, and a registration that still points here (a
// kube-apiserver that has not yet dropped it) is answered without change. Enrolling again
// serves it again.
func TestUnenrolmentHandsTheShootBack(t *testing.T) {
	ctx := context.Background()
	serviceAccount(t, shootA, "unenrolled", false) // opts out of automount: the webhook mounts
	c := serverClient(t)
	patched := func() bool {
		var answer admissionv1.AdmissionReview
		review(t, c, tenantPath(shootA.tenant, projectedtokenmount.Path), admissionReviewBody(t, "unenrolled"), &answer)
		require.True(t, answer.Response.Allowed, "%+v", answer.Response.Result)
		return answer.Response.Patch != nil
	}
	require.True(t, patched(), "an enrolled shoot's Pod gets the projected token")

	deleted, err := enrolmentpkg.Unenrol(ctx, seed.Client, shootA.tenant)
	require.NoError(t, err)
	t.Cleanup(func() {
		// The token requestor's part: no token requestor runs here.
		require.NoError(t, testenv.EnrollWebhookAccess(ctx, seed.Client, shootA.tenant, shootA.env))
		_, err := enrolmentpkg.Enrol(ctx, seed.Client, shootA.tenant, "gardener-knative", enrolment())
		require.NoError(t, err)
		tenants.Forget(shootA.tenant)
		assert.True(t, patched(), "enrolled again, served again")
	})
	assert.Len(t, deleted, 6, "every registration of ours: %v", deleted)
	assert.Empty(t, registered(t, shootA))
	// The servers' identity in the shoot is gone, and its token with it.
	assert.True(t, apierrors.IsNotFound(seed.Client.Get(ctx, client.ObjectKeyFromObject(webhookaccess.Secret(shootA.tenant)), &corev1.Secret{})))
	assert.True(t, apierrors.IsNotFound(shootA.env.Client.Get(ctx, client.ObjectKeyFromObject(webhookaccess.ServiceAccount()), &corev1.ServiceAccount{})))
	assert.True(t, apierrors.IsNotFound(shootA.env.Client.Get(ctx, client.ObjectKey{Name: "gardener-knative:grm-webhooks"}, &rbacv1.ClusterRoleBinding{})))
	cluster := &extensionsv1alpha1.Cluster{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Name: string(shootA.tenant)}, cluster))
	assert.NotContains(t, cluster.Labels, tenant.EnrolledLabel)
	discovered, err := clients.Discover(ctx, seed.Client, tenant.DefaultPrefix, 100)
	require.NoError(t, err)
	assert.NotContains(t, discovered, shootA.tenant)

	tenants.Forget(shootA.tenant) // the server's client of A, kept up to TENANT_CACHE_TTL otherwise
	assert.False(t, patched(), "not enrolled: allowed without a patch")
	_, err = tenants.Client(ctx, shootA.tenant)
	assert.True(t, clients.IsNotEnrolled(err), "%v", err)
}
