package shoot_test

import (
	"context"
	"fmt"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

const protection = "gardener.cloud/reference-protection"

// fixture is the shoot function served over HTTP with a project namespace of its own.
type fixture struct {
	*functiontest.Harness
	ns string
}

func newFixture(t testing.TB, options ...functiontest.Option) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garden-", Labels: map[string]string{"gardener.cloud/role": "project"}}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return &fixture{Harness: functiontest.New(t, env, shoot.Function, options...), ns: ns.Name}
}

func (f *fixture) secret(t testing.TB, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	require.NoError(t, env.Client.Create(context.Background(), s))
	return s
}

func (f *fixture) configMap(t testing.TB, name string) *corev1.ConfigMap {
	t.Helper()
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	require.NoError(t, env.Client.Create(context.Background(), c))
	return c
}

func (f *fixture) workloadIdentity(t testing.TB, name string) *securityv1alpha1.WorkloadIdentity {
	t.Helper()
	w := &securityv1alpha1.WorkloadIdentity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	require.NoError(t, env.Client.Create(context.Background(), w))
	return w
}

// references is what a Shoot's spec references.
type references struct {
	dnsSecret, auditPolicy, admissionKubeconfig, authnConfig string
	resources                                                []autoscalingv1.CrossVersionObjectReference
}

func resource(apiVersion, kind, name string) autoscalingv1.CrossVersionObjectReference {
	return autoscalingv1.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}
}

func (r references) apply(s *gardencorev1beta1.Shoot) {
	s.Spec.DNS, s.Spec.Kubernetes.KubeAPIServer, s.Spec.Resources = nil, nil, nil
	if r.dnsSecret != "" {
		s.Spec.DNS = &gardencorev1beta1.DNS{Providers: []gardencorev1beta1.DNSProvider{{
			Type:           ptr.To("aws-route53"),
			CredentialsRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: r.dnsSecret},
		}}}
	}
	api := &gardencorev1beta1.KubeAPIServerConfig{}
	if r.auditPolicy != "" || r.admissionKubeconfig != "" || r.authnConfig != "" {
		s.Spec.Kubernetes.KubeAPIServer = api
	}
	if r.auditPolicy != "" {
		api.AuditConfig = &gardencorev1beta1.AuditConfig{AuditPolicy: &gardencorev1beta1.AuditPolicy{ConfigMapRef: &corev1.ObjectReference{Name: r.auditPolicy}}}
	}
	if r.admissionKubeconfig != "" {
		api.AdmissionPlugins = []gardencorev1beta1.AdmissionPlugin{{Name: "ImagePolicyWebhook", KubeconfigSecretName: ptr.To(r.admissionKubeconfig)}}
	}
	if r.authnConfig != "" {
		api.StructuredAuthentication = &gardencorev1beta1.StructuredAuthentication{ConfigMapName: r.authnConfig}
	}
	for _, ref := range r.resources {
		s.Spec.Resources = append(s.Spec.Resources, gardencorev1beta1.NamedResourceReference{Name: ref.Name, ResourceRef: ref})
	}
}

// shoot creates a Shoot with the given references; it has not been reconciled by gardenlet yet.
func (f *fixture) shoot(t testing.TB, name string, refs references, finalizers ...string) *gardencorev1beta1.Shoot {
	t.Helper()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Finalizers: finalizers}}
	refs.apply(s)
	require.NoError(t, env.Client.Create(context.Background(), s))
	return s
}

// observe is gardenlet picking up the Shoot's spec: status.observedGeneration catches up.
func observe(t testing.TB, s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
	t.Helper()
	s = fresh(t, s)
	s.Status.ObservedGeneration = s.Generation
	require.NoError(t, env.Client.Status().Update(context.Background(), s))
	return s
}

// change changes a Shoot's references, as a user does.
func change(t testing.TB, s *gardencorev1beta1.Shoot, refs references) *gardencorev1beta1.Shoot {
	t.Helper()
	s = fresh(t, s)
	refs.apply(s)
	require.NoError(t, env.Client.Update(context.Background(), s))
	return s
}

func fresh[T client.Object](t testing.TB, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj
}

func protected(t testing.TB, obj client.Object) bool {
	t.Helper()
	for _, f := range fresh(t, obj).GetFinalizers() {
		if f == protection {
			return true
		}
	}
	return false
}

func gone(t testing.TB, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

// The function runs with its RBAC: every kind a Shoot references is patched.
func TestEveryReferencedKindIsProtectedWhileReferenced(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	dns, admission := f.secret(t, "dns"), f.secret(t, "admission-kubeconfig")
	audit, authn := f.configMap(t, "audit-policy"), f.configMap(t, "authn")
	resourceSecret, resourceConfigMap := f.secret(t, "resource-secret"), f.configMap(t, "resource-configmap")
	identity := f.workloadIdentity(t, "identity")
	unrelated := f.secret(t, "unrelated")
	all := references{dnsSecret: "dns", auditPolicy: "audit-policy", admissionKubeconfig: "admission-kubeconfig", authnConfig: "authn",
		resources: []autoscalingv1.CrossVersionObjectReference{
			resource("v1", "Secret", "resource-secret"), resource("v1", "ConfigMap", "resource-configmap"),
			resource("security.gardener.cloud/v1alpha1", "WorkloadIdentity", "identity"),
		}}
	s := f.shoot(t, "shoot", all)

	f.Send("add", s)
	for _, obj := range []client.Object{dns, admission, audit, authn, resourceSecret, resourceConfigMap, identity, s} {
		assert.True(t, protected(t, obj), "%T %s", obj, obj.GetName())
	}
	assert.False(t, protected(t, unrelated))

	// The user drops some references; gardenlet has not observed the change when its event comes.
	s = observe(t, s)
	s = change(t, s, references{dnsSecret: "dns", resources: []autoscalingv1.CrossVersionObjectReference{resource("security.gardener.cloud/v1alpha1", "WorkloadIdentity", "identity")}})
	f.Send("update", s)
	assert.True(t, protected(t, dns))
	assert.True(t, protected(t, identity))
	for _, obj := range []client.Object{admission, audit, authn, resourceSecret, resourceConfigMap} {
		assert.False(t, protected(t, obj), "%T %s is no longer referenced", obj, obj.GetName())
	}
	assert.True(t, protected(t, s))

	s = observe(t, s)
	s = change(t, s, references{})
	f.Send("update", s)
	assert.False(t, protected(t, dns))
	assert.False(t, protected(t, identity))
	assert.False(t, protected(t, s), "a Shoot that references nothing holds no finalizer")
}

func TestSharedReferencesStayProtected(t *testing.T) {
	f := newFixture(t)
	shared := f.secret(t, "shared")
	first := f.shoot(t, "first", references{dnsSecret: "shared"})
	second := f.shoot(t, "second", references{admissionKubeconfig: "shared"})
	f.Send("add", first)
	f.Send("add", second)

	first = change(t, observe(t, first), references{})
	f.Send("update", first)
	assert.True(t, protected(t, shared), "the second Shoot still references it")
	assert.False(t, protected(t, first))
	assert.True(t, protected(t, second))
}

// A Shoot's references outlive it until gardenlet has released it; then they are released and,
// last, the Shoot's own finalizer, so that it can go.
func TestShootDeletion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	dns, audit := f.secret(t, "dns"), f.configMap(t, "audit-policy")
	s := f.shoot(t, "shoot", references{dnsSecret: "dns", auditPolicy: "audit-policy"}, "gardener")
	f.Send("add", s)
	require.True(t, protected(t, s))

	require.NoError(t, env.Client.Delete(ctx, s))
	s = observe(t, s)
	f.Send("update", s)
	assert.True(t, protected(t, dns), "gardenlet is still deleting the Shoot")
	assert.True(t, protected(t, audit))

	s = fresh(t, s)
	s.Finalizers = []string{protection} // gardenlet is done
	require.NoError(t, env.Client.Update(ctx, s))
	f.Send("update", s)
	assert.False(t, protected(t, dns))
	assert.False(t, protected(t, audit))
	assert.True(t, gone(t, s))
}

// Events can be dropped, and objects referenced after their Shoot was created send no event:
// the sweep alone protects and releases.
func TestSweepConverges(t *testing.T) {
	f := newFixture(t)
	dns := f.secret(t, "dns")
	s := observe(t, f.shoot(t, "shoot", references{dnsSecret: "dns", auditPolicy: "created-later"}))
	leaked := f.secret(t, "leaked")
	leaked.Finalizers = []string{protection}
	require.NoError(t, env.Client.Update(context.Background(), leaked))

	f.Sweep("reference")
	assert.True(t, protected(t, dns))
	assert.True(t, protected(t, s))
	assert.False(t, protected(t, leaked), "no Shoot references it")

	audit := f.configMap(t, "created-later")
	change(t, s, references{auditPolicy: "created-later"})
	f.Sweep("reference")
	assert.True(t, protected(t, audit))
	assert.False(t, protected(t, dns))
	assert.True(t, protected(t, s))
}

func TestRunsWithItsRBAC(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, functiontest.AsFunction())
	dns := f.secret(t, "dns")
	identity := f.workloadIdentity(t, "identity")
	s := f.shoot(t, "shoot", references{dnsSecret: "dns", resources: []autoscalingv1.CrossVersionObjectReference{resource("security.gardener.cloud/v1alpha1", "WorkloadIdentity", "identity")}})
	f.Send("add", s)
	assert.True(t, protected(t, dns))
	assert.True(t, protected(t, identity))
	assert.True(t, protected(t, s))

	change(t, observe(t, s), references{})
	f.Sweep("reference")
	assert.False(t, protected(t, dns))
	assert.False(t, protected(t, identity))
	assert.False(t, protected(t, s))

	c, _, err := env.CountingClient("system:serviceaccount:gardener-knative:shoot")
	require.NoError(t, err)
	err = c.Get(ctx, client.ObjectKeyFromObject(dns), &corev1.Secret{})
	assert.True(t, apierrors.IsForbidden(err), "the function never reads a Secret's data, got %v", err)
}

// TestRequestCost pins what events and sweeps cost in API requests; the numbers are the ones
// docs/functions/shoot.md reports.
func TestRequestCost(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.secret(t, "dns")
	s := f.shoot(t, "shoot", references{dnsSecret: "dns"})
	f.Send("add", s) // the first event of a process also asks discovery for REST mappings

	measure := f.Measure
	s = observe(t, s)
	assert.Empty(t, measure(func() { f.Send("update", s) }), "a status update of a settled Shoot: filtered")
	s.Spec.Region = "eu-2"
	require.NoError(t, env.Client.Update(ctx, s))
	assert.Equal(t, map[string]int{"list": 4}, measure(func() { f.Send("update", s) }),
		"a spec change that changes no reference: LIST the namespace's Shoots, Secrets, ConfigMaps and WorkloadIdentities")
	s = observe(t, s)
	assert.Equal(t, map[string]int{"list": 5, "patch": 2}, measure(func() { f.Send("update", change(t, s, references{})) }),
		"a reference dropped: 4 LISTs, PATCH the Secret and the Shoot, LIST the Shoots again live (one created meanwhile is protected again)")

	// A sweep over 100 project namespaces with 10 Shoots each, all protected: 5 LISTs, nothing else.
	for n := range 100 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garden-", Labels: map[string]string{"gardener.cloud/role": "project"}}}
		require.NoError(t, env.Client.Create(ctx, ns))
		require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: ns.Name, Finalizers: []string{protection}}}))
		for i := range 10 {
			sh := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shoot-%d-%d", n, i), Namespace: ns.Name, Finalizers: []string{protection}}}
			references{dnsSecret: "dns"}.apply(sh)
			require.NoError(t, env.Client.Create(ctx, sh))
		}
	}
	pages := 0
	for _, list := range []client.ObjectList{&gardencorev1beta1.ShootList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &securityv1alpha1.WorkloadIdentityList{}, &corev1.NamespaceList{}} {
		require.NoError(t, env.Client.List(ctx, list))
		pages += max(1, (meta.LenList(list)+499)/500)
	}
	counts := measure(func() { f.Sweep("reference") })
	assert.Equal(t, map[string]int{"list": pages}, counts, "pages of 500 of Shoots, Secrets, ConfigMaps, WorkloadIdentities and namespaces; no GET, no write")
	t.Logf("no-op sweep over 100 namespaces of 10 Shoots: %v", counts)
}
