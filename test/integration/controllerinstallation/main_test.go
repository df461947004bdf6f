// Package controllerinstallation_test serves the controllerinstallation function in-process
// against TWO real control planes, the garden (Source) and a seed (Target), with a real OCI
// registry in-process, and sends it the CloudEvents its sources would.
package controllerinstallation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/helmrelease"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// garden and seed are two control planes: the function reads the first and installs on the
// second.
var garden, seed *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if garden, err = testenv.Start(); err == nil {
		seed, err = testenv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if garden != nil {
			_ = garden.Stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	_ = seed.Stop()
	_ = garden.Stop()
	os.Exit(code)
}

// fixture is the function served for one seed of its own (named after the test), with a
// registry that requires credentials.
type fixture struct {
	*functiontest.Harness
	seedName string
	registry *ocitest.Registry
	config   *controllerinstallation.Config
}

func newFixture(t testing.TB, options ...functiontest.Option) *fixture {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	f := &fixture{seedName: name, registry: ocitest.Start("robot", "s3cr3t")}
	t.Cleanup(f.registry.Close)
	cfg := &controllerinstallation.Config{
		SeedName: name, GardenerVersion: "v1.150.0", GardenClusterIdentity: "garden-test",
		FeatureGates: map[string]bool{"DefaultSeccompProfile": true}, ChartCacheBytes: 8 << 20,
		HelmTimeout: time.Minute, HelmMaxHistory: 3, HelmPendingStaleAfter: 5 * time.Minute,
		PodName: "replica-a",
	}
	f.config = cfg
	f.Harness = functiontest.New(t, garden, controllerinstallation.Function, append([]functiontest.Option{functiontest.AsFunction(),
		functiontest.WithTarget(seed), functiontest.WithConfig(cfg)}, options...)...)
	f.createSeed(t)
	return f
}

func (f *fixture) createSeed(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: f.seedName, Labels: map[string]string{"env": "test"}}}
	s.Spec.Provider = gardencorev1beta1.SeedProvider{Type: "local", Region: "local", Zones: []string{"a", "b"}}
	s.Spec.Networks = gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", Services: "10.2.0.0/16"}
	s.Spec.Ingress = &gardencorev1beta1.Ingress{Domain: "ingress.local"}
	require.NoError(t, garden.Client.Create(ctx, s))
	s.Status.ClusterIdentity = ptr.To("seed-identity-" + f.seedName)
	require.NoError(t, garden.Client.Status().Update(ctx, s))
}

// pushChart pushes the ConfigMap chart in the given version to the fixture's registry.
func (f *fixture) pushChart(t testing.TB, name, version string) (ref, digest string) {
	t.Helper()
	archive, err := ocitest.ConfigMapChart(name, version)
	require.NoError(t, err)
	ref, digest, err = f.registry.Push(archive, name, version)
	require.NoError(t, err)
	return ref, digest
}

// pullSecret creates the registry's pull secret in the garden namespace, labelled (or not) as
// gardenlet requires.
func (f *fixture) pullSecret(t testing.TB, labelled bool) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreAlreadyExists(garden.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1beta1constants.GardenNamespace}})))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-" + f.seedName, Namespace: v1beta1constants.GardenNamespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: f.registry.DockerConfigJSON()},
	}
	if labelled {
		s.Labels = map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleHelmPullSecret}
	}
	require.NoError(t, garden.Client.Create(ctx, s))
	return s.Name
}

// helmDeployment is a v1beta1 ControllerDeployment of type helm with the given providerConfig.
func helmDeployment(t testing.TB, name string, helm gardencorev1beta1.HelmControllerDeployment) *gardencorev1beta1.ControllerDeployment {
	t.Helper()
	raw, err := json.Marshal(helm)
	require.NoError(t, err)
	return &gardencorev1beta1.ControllerDeployment{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		Type:           controllerinstallation.DeploymentTypeHelm,
		ProviderConfig: runtime.RawExtension{Raw: raw},
	}
}

func values(t testing.TB, v map[string]any) *apiextensionsv1.JSON {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return &apiextensionsv1.JSON{Raw: raw}
}

// chain creates a ControllerDeployment, a ControllerRegistration referencing it and a
// ControllerInstallation of both on the fixture's seed, named name; it returns the installation.
func (f *fixture) chain(t testing.TB, name string, helm gardencorev1beta1.HelmControllerDeployment) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, garden.Client.Create(ctx, helmDeployment(t, name, helm)))
	reg := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	reg.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: name}}}
	require.NoError(t, garden.Client.Create(ctx, reg))
	return f.installation(t, name, name, name)
}

func (f *fixture) installation(t testing.TB, name, registration, deployment string) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	return installationOf(t, f.seedName, name, registration, deployment)
}

// installationOf creates an installation of the registration and deployment for the seed.
func installationOf(t testing.TB, seed, name, registration, deployment string) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	ci := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ci.Spec.RegistrationRef = corev1.ObjectReference{Name: registration}
	ci.Spec.DeploymentRef = &corev1.ObjectReference{Name: deployment}
	ci.Spec.SeedRef = &corev1.ObjectReference{Name: seed}
	require.NoError(t, garden.Client.Create(context.Background(), ci))
	return ci
}

func get(t testing.TB, obj client.Object) client.Object {
	t.Helper()
	require.NoError(t, garden.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj
}

// requireCondition asserts the installation's condition of type ct.
func requireCondition(t testing.TB, ci *gardencorev1beta1.ControllerInstallation, ct gardencorev1beta1.ConditionType, status gardencorev1beta1.ConditionStatus, reason string) {
	t.Helper()
	get(t, ci)
	c := function.GetCondition(ci.Status.Conditions, ct)
	require.NotNil(t, c, "condition %s in %+v", ct, ci.Status.Conditions)
	require.Equal(t, status, c.Status, "condition %s: %s", ct, c.Message)
	require.Equal(t, reason, c.Reason, "condition %s: %s", ct, c.Message)
}

// seedRelease reads the release from the seed with Helm itself.
func seedRelease(t testing.TB, namespace, name string) (*release.Release, error) {
	t.Helper()
	helm, err := helmrelease.New(seed.Config, 3, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return helm.Get(namespace, name)
}

func configMap(t testing.TB, namespace, name string) (*corev1.ConfigMap, bool) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := seed.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return cm, true
}

// finalizeNamespace does what kube-controller-manager's namespace controller would once the
// namespace is empty (envtest runs none): it releases the namespace's finalizer.
func finalizeNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(seed.Config)
	require.NoError(t, err)
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, ns.DeletionTimestamp, "namespace %s is not being deleted", name)
	ns.Spec.Finalizers = nil
	_, err = cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// writes counts the function's writes on one cluster's counter.
func writes(counts map[string]int) int {
	return counts["create"] + counts["update"] + counts["patch"] + counts["delete"]
}

// measureBoth runs do and returns the function's requests by verb on the garden and the seed.
func (f *fixture) measureBoth(do func()) (gardenCounts, seedCounts map[string]int) {
	verbs := []string{"get", "list", "create", "update", "patch", "delete"}
	before := map[string]int{}
	for _, v := range verbs {
		before[v] = f.TargetCounter.Total(v)
	}
	gardenCounts = f.Measure(do)
	seedCounts = map[string]int{}
	for _, v := range verbs {
		if n := f.TargetCounter.Total(v) - before[v]; n > 0 {
			seedCounts[v] = n
		}
	}
	return gardenCounts, seedCounts
}
