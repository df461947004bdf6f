package extension_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/registration"
	requiredruntime "github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/runtime"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/virtual"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

var start = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func newHarness(t testing.TB) *functiontest.Harness {
	t.Helper()
	return functiontest.New(t, env, extension.Function, functiontest.AsFunction(), functiontest.At(start))
}

const ociRef = "registry.example.com/gardener/extensions/local/extension:v1.0.0"

// newExtension creates a provider-local-like Extension named name; the test removes it and
// what it owns when it ends.
func newExtension(t *testing.T, name string, finalizers ...string) *operatorv1alpha1.Extension {
	t.Helper()
	ext := extensionObject(name, finalizers...)
	require.NoError(t, env.Client.Create(context.Background(), ext))
	t.Cleanup(func() { cleanUp(t, name) })
	return ext
}

// extensionObject is a provider-local-like Extension named name.
func extensionObject(name string, finalizers ...string) *operatorv1alpha1.Extension {
	ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers,
		Annotations: map[string]string{v1beta1constants.AnnotationPodSecurityEnforce: "privileged"}}}
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{
		{Kind: "Infrastructure", Type: name},
		// Compatible with the garden, but not auto-enabled there: not required in the runtime
		// cluster.
		{Kind: "Extension", Type: name, AutoEnable: []gardencorev1beta1.ClusterType{"shoot"},
			ClusterCompatibility: []gardencorev1beta1.ClusterType{"shoot", "garden"}, ReconcileTimeout: &metav1.Duration{Duration: 30 * time.Second}},
	}
	policy := gardencorev1beta1.ControllerDeploymentPolicyAlways
	ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
		DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To(ociRef)}}},
		Values:         &apiextensionsv1.JSON{Raw: []byte(`{"controllers":{"dnsrecord":{"concurrentSyncs":20}}}`)},
		Policy:         &policy,
	}}
	return ext
}

// cleanUp removes the Extension name and its registration, finalizers and all.
func cleanUp(t *testing.T, name string) {
	ctx := context.Background()
	for _, obj := range []client.Object{&operatorv1alpha1.Extension{}, &gardencorev1beta1.ControllerRegistration{}, &gardencorev1beta1.ControllerDeployment{}} {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
			continue
		}
		obj.SetFinalizers(nil)
		assert.NoError(t, client.IgnoreNotFound(env.Client.Update(ctx, obj)))
		assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, obj)))
	}
}

func get[T client.Object](t *testing.T, name string, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, obj))
	return obj
}

func gone(t *testing.T, name string, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

func condition(t *testing.T, ext *operatorv1alpha1.Extension, ct gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	t.Helper()
	c := function.GetCondition(ext.Status.Conditions, ct)
	require.NotNil(t, c, "no condition %s in %+v", ct, ext.Status.Conditions)
	return *c
}

func writes(counts map[string]int) int {
	return counts["create"] + counts["update"] + counts["patch"] + counts["delete"]
}

func events(t *testing.T, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault)))
	var messages []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Extension" && e.InvolvedObject.Name == name {
			messages = append(messages, e.Reason+": "+e.Message)
		}
	}
	return messages
}

func TestRegistrationIsCreatedFromTheExtension(t *testing.T) {
	h := newHarness(t)
	const name = "local-create"
	ext := newExtension(t, name)
	h.Send("add", ext)

	ext = get(t, name, &operatorv1alpha1.Extension{})
	assert.Contains(t, ext.Finalizers, operatorv1alpha1.FinalizerName)
	installed := condition(t, ext, operatorv1alpha1.ExtensionInstalled)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, installed.Status)
	assert.Equal(t, "ReconcileSuccessful", installed.Reason)
	assert.Equal(t, "Extension has been reconciled successfully", installed.Message)
	assert.Equal(t, ext.Generation, ext.Status.ObservedGeneration)

	cr := get(t, name, &gardencorev1beta1.ControllerRegistration{})
	assert.Equal(t, name, cr.Labels[registration.ExtensionLabel])
	assert.Equal(t, "privileged", cr.Annotations[v1beta1constants.AnnotationPodSecurityEnforce])
	assert.Equal(t, []gardencorev1beta1.ControllerResource{
		{Kind: "Infrastructure", Type: name},
		{Kind: "Extension", Type: name, AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{"shoot"},
			ReconcileTimeout: &metav1.Duration{Duration: 30 * time.Second}},
	}, cr.Spec.Resources, "the garden is gardener-operator's business")
	require.NotNil(t, cr.Spec.Deployment)
	assert.Equal(t, ptr.To(gardencorev1beta1.ControllerDeploymentPolicyAlways), cr.Spec.Deployment.Policy)
	assert.Equal(t, []gardencorev1beta1.DeploymentRef{{Name: name}}, cr.Spec.Deployment.DeploymentRefs)

	cd := get(t, name, &gardencorev1beta1.ControllerDeployment{})
	assert.Equal(t, "helm", cd.Type)
	var helm gardencorev1beta1.HelmControllerDeployment
	require.NoError(t, json.Unmarshal(cd.ProviderConfig.Raw, &helm))
	assert.Equal(t, &gardencorev1beta1.OCIRepository{Ref: ptr.To(ociRef)}, helm.OCIRepository)
	assert.JSONEq(t, `{"controllers":{"dnsrecord":{"concurrentSyncs":20}}}`, string(helm.Values.Raw))
	assert.Equal(t, []string{"Reconciled: ControllerRegistration and ControllerDeployment applied successfully"}, events(t, name))

	// Its own status update comes back as an event and passes no predicate; a duplicate of the
	// add event reconciles and writes nothing.
	code, _ := h.Post(h.Event("update", ext))
	assert.Equal(t, 200, code)
	counts := h.Measure(func() { h.Send("add", ext) })
	assert.Zero(t, writes(counts), "nothing changed: %v", counts)
}

func TestRegistrationFollowsTheSpec(t *testing.T) {
	h := newHarness(t)
	const name = "local-update"
	ext := newExtension(t, name)
	h.Send("add", ext)
	ext = get(t, name, &operatorv1alpha1.Extension{})

	ext.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository = &gardencorev1.OCIRepository{Repository: ptr.To("registry.example.com/local"), Digest: ptr.To("sha256:abc")}
	ext.Spec.Resources = ext.Spec.Resources[:1]
	require.NoError(t, env.Client.Update(context.Background(), ext))
	h.Send("update", ext)

	cr := get(t, name, &gardencorev1beta1.ControllerRegistration{})
	assert.Equal(t, []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: name}}, cr.Spec.Resources)
	cd := get(t, name, &gardencorev1beta1.ControllerDeployment{})
	var helm gardencorev1beta1.HelmControllerDeployment
	require.NoError(t, json.Unmarshal(cd.ProviderConfig.Raw, &helm))
	assert.Equal(t, &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/local"), Digest: ptr.To("sha256:abc")}, helm.OCIRepository)
	ext = get(t, name, &operatorv1alpha1.Extension{})
	assert.Equal(t, ext.Generation, ext.Status.ObservedGeneration)

	// Without a Helm deployment the Extension implies no registration.
	ext.Spec.Deployment.ExtensionDeployment = nil
	ext.Spec.Deployment.AdmissionDeployment = &operatorv1alpha1.AdmissionDeploymentSpec{RuntimeCluster: &operatorv1alpha1.DeploymentSpec{}}
	require.NoError(t, env.Client.Update(context.Background(), ext))
	h.Send("update", ext)
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}))
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerDeployment{}))
	assert.Contains(t, events(t, name), "Deleted: ControllerRegistration and ControllerDeployment deleted successfully")
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionInstalled).Status)
}

func TestRegistrationLeavesForeignObjectsAlone(t *testing.T) {
	h := newHarness(t)
	const name = "local-foreign"
	ext := newExtension(t, name)
	ext.Spec.Deployment.ExtensionDeployment.Helm = nil
	require.NoError(t, env.Client.Update(context.Background(), ext))
	foreign := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, env.Client.Create(context.Background(), foreign))

	h.Send("add", ext)
	assert.False(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}), "a registration the Extension does not own stays")
}

func TestDeletionWaitsForTheRegistration(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const name = "local-delete"
	// "test/keep" keeps the Extension after the function let it go, so its status can be read.
	ext := newExtension(t, name, "test/keep")
	h.Send("add", ext)

	// GCM's ControllerRegistration finalizer holds the registration while installations exist.
	cr := get(t, name, &gardencorev1beta1.ControllerRegistration{})
	cr.Finalizers = []string{"core.gardener.cloud/controllerregistration"}
	require.NoError(t, env.Client.Update(ctx, cr))

	require.NoError(t, env.Client.Delete(ctx, ext))
	ext = get(t, name, &operatorv1alpha1.Extension{})
	h.Send("update", ext)
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerDeployment{}))
	cr = get(t, name, &gardencorev1beta1.ControllerRegistration{})
	assert.NotNil(t, cr.DeletionTimestamp, "deleted, held by its finalizer")
	ext = get(t, name, &operatorv1alpha1.Extension{})
	assert.Contains(t, ext.Finalizers, operatorv1alpha1.FinalizerName, "waits for the registration")
	assert.Equal(t, "ReconcileSuccessful", condition(t, ext, operatorv1alpha1.ExtensionInstalled).Reason)

	// Another event while it waits writes nothing.
	counts := h.Measure(func() { h.Send("update", ext) })
	assert.Zero(t, writes(counts), "%v", counts)

	cr.Finalizers = nil
	require.NoError(t, env.Client.Update(ctx, cr))
	h.Send("delete", cr)
	ext = get(t, name, &operatorv1alpha1.Extension{})
	assert.NotContains(t, ext.Finalizers, operatorv1alpha1.FinalizerName)
	installed := condition(t, ext, operatorv1alpha1.ExtensionInstalled)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, installed.Status)
	assert.Equal(t, "DeleteSuccessful", installed.Reason)
	assert.Equal(t, "Extension has been deleted successfully", installed.Message)
}

func TestDeletionKeepsAnExtensionRequiredInTheRuntimeCluster(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const name = "local-runtime"
	ext := newExtension(t, name)
	h.Send("add", ext)
	ext = get(t, name, &operatorv1alpha1.Extension{})
	ext.Status.Conditions = function.SetCondition(h.Clock, ext.Status.Conditions, operatorv1alpha1.ExtensionRequiredRuntime, gardencorev1beta1.ConditionTrue, "ExtensionRequired", "Extension required for kinds [Extension]")
	require.NoError(t, env.Client.Status().Update(ctx, ext))

	require.NoError(t, env.Client.Delete(ctx, ext))
	h.Send("update", get(t, name, &operatorv1alpha1.Extension{}))
	ext = get(t, name, &operatorv1alpha1.Extension{})
	assert.Contains(t, ext.Finalizers, operatorv1alpha1.FinalizerName)
	installed := condition(t, ext, operatorv1alpha1.ExtensionInstalled)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, installed.Status)
	assert.Equal(t, "InstalledInRuntime", installed.Reason)
	assert.Equal(t, "Extension is still required in runtime cluster", installed.Message)
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}), "the registration goes anyway")
}

// installation creates a ControllerInstallation of the registration name on seed, with the
// Required condition status (none when empty).
func installation(t *testing.T, h *functiontest.Harness, name, registrationName, seed string, required gardencorev1beta1.ConditionStatus) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	ctx := context.Background()
	ci := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ci.Spec.RegistrationRef.Name = registrationName
	ci.Spec.DeploymentRef = &corev1.ObjectReference{Name: registrationName}
	ci.Spec.SeedRef = &corev1.ObjectReference{Name: seed}
	require.NoError(t, env.Client.Create(ctx, ci))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(context.Background(), ci))) })
	if required != "" {
		setRequired(t, h, ci, required)
	}
	return ci
}

func setRequired(t *testing.T, h *functiontest.Harness, ci *gardencorev1beta1.ControllerInstallation, status gardencorev1beta1.ConditionStatus) {
	t.Helper()
	ci.Status.Conditions = function.SetCondition(h.Clock, ci.Status.Conditions, gardencorev1beta1.ControllerInstallationRequired, status, "Test", "set by the test")
	require.NoError(t, env.Client.Status().Update(context.Background(), ci))
}

func TestRequiredVirtualFollowsTheInstallations(t *testing.T) {
	h := newHarness(t)
	const name = "local-virtual"
	ext := newExtension(t, name)
	h.Send("add", ext) // both reconcilers: the new Extension is not required anywhere yet
	notRequired := condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredVirtual)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, notRequired.Status)
	assert.Equal(t, virtual.ReasonNotRequired, notRequired.Reason)
	assert.Equal(t, "Extension does not have required ControllerInstallations for seed clusters", notRequired.Message)

	// An installation on a seed that does not need it yet: the Extension (in the runtime cluster,
	// which the mapper cannot read) and the installations are read, nothing is written.
	ci := installation(t, h, name+"-seed-a", name, "seed-a", gardencorev1beta1.ConditionFalse)
	counts := h.Measure(func() { h.Send("add", ci) })
	assert.Equal(t, map[string]int{"get": 1, "list": 1}, counts)

	h.Clock.Step(time.Minute)
	setRequired(t, h, ci, gardencorev1beta1.ConditionTrue)
	h.Send("update", ci)
	required := condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredVirtual)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, required.Status)
	assert.Equal(t, "RequiredControllerInstallation", required.Reason)
	assert.Equal(t, "Extension has required ControllerInstallations for seed clusters", required.Message)
	assert.Equal(t, start.Add(time.Minute), required.LastTransitionTime.Time.UTC())

	// A second required installation changes nothing; the first one's deletion neither while
	// the second is required.
	other := installation(t, h, name+"-seed-b", name, "seed-b", gardencorev1beta1.ConditionTrue)
	counts = h.Measure(func() { h.Send("update", other) })
	assert.Zero(t, writes(counts), "%v", counts)
	require.NoError(t, env.Client.Delete(context.Background(), ci))
	h.Send("delete", ci)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredVirtual).Status)

	setRequired(t, h, other, gardencorev1beta1.ConditionFalse)
	h.Send("update", other)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredVirtual).Status)
}

func TestSweepsCatchUpAndWriteNothingWhenNothingChanged(t *testing.T) {
	h := newHarness(t)
	const name = "local-sweep"
	newExtension(t, name) // no event: a missed one
	installation(t, h, name+"-seed-a", name, "seed-a", gardencorev1beta1.ConditionTrue)

	h.Sweep(registration.ResyncSweepName)
	h.Sweep(virtual.SweepName)
	h.Sweep(requiredruntime.SweepName)
	ext := get(t, name, &operatorv1alpha1.Extension{})
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, ext, operatorv1alpha1.ExtensionRequiredRuntime).Status)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, ext, operatorv1alpha1.ExtensionInstalled).Status)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, ext, operatorv1alpha1.ExtensionRequiredVirtual).Status)
	assert.False(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}))

	// A registration changed behind the function's back is restored.
	cr := get(t, name, &gardencorev1beta1.ControllerRegistration{})
	cr.Spec.Resources = nil
	require.NoError(t, env.Client.Update(context.Background(), cr))
	h.Sweep(registration.ResyncSweepName)
	assert.Len(t, get(t, name, &gardencorev1beta1.ControllerRegistration{}).Spec.Resources, 2)

	for _, sweep := range []string{registration.ResyncSweepName, virtual.SweepName, requiredruntime.SweepName} {
		counts := h.Measure(func() { h.Sweep(sweep) })
		assert.Zero(t, writes(counts), "sweep %s: %v", sweep, counts)
		assert.Zero(t, counts["get"], "sweep %s reads everything from its lists: %v", sweep, counts)
	}
}
