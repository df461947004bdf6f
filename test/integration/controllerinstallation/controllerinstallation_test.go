package controllerinstallation_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

const (
	valid       = gardencorev1beta1.ControllerInstallationValid
	installed   = gardencorev1beta1.ControllerInstallationInstalled
	healthy     = gardencorev1beta1.ControllerInstallationHealthy
	progressing = gardencorev1beta1.ControllerInstallationProgressing
	isTrue      = gardencorev1beta1.ConditionTrue
	isFalse     = gardencorev1beta1.ConditionFalse
)

// An installation whose deployment names a chart by tag in a registry that requires the pull
// secret's credentials is installed as a release on the seed, with the deployment's values and
// gardenlet's injected values, in Gardener's namespace; a second event with nothing changed
// writes nothing on either cluster.
func TestInstallFromOCIWithPullSecret(t *testing.T) {
	f := newFixture(t)
	ref, _ := f.pushChart(t, "provider-test", "0.1.0")
	ci := f.chain(t, "provider-oci", gardencorev1beta1.HelmControllerDeployment{
		OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref), PullSecretRef: &corev1.LocalObjectReference{Name: f.pullSecret(t, true)}},
		Values:        values(t, map[string]any{"greeting": "from the deployment"}),
	})

	f.Send("add", ci)

	get(t, ci)
	assert.Contains(t, ci.Finalizers, controllerinstallation.FinalizerName)
	requireCondition(t, ci, valid, isTrue, "RegistrationValid")
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	requireCondition(t, ci, healthy, isTrue, "ControllerHealthy")
	requireCondition(t, ci, progressing, isFalse, "ControllerRolledOut")

	rel, err := seedRelease(t, "extension-provider-oci", "provider-oci")
	require.NoError(t, err)
	assert.Equal(t, release.StatusDeployed, rel.Info.Status)
	assert.Equal(t, "from the deployment", rel.Config["greeting"])
	injected := rel.Config["gardener"].(map[string]any)
	assert.Equal(t, "v1.150.0", injected["version"])
	assert.Equal(t, map[string]any{"clusterIdentity": "garden-test"}, injected["garden"])
	assert.Equal(t, map[string]any{"featureGates": map[string]any{"DefaultSeccompProfile": true}}, injected["gardenlet"])
	seedValues := injected["seed"].(map[string]any)
	assert.Equal(t, f.seedName, seedValues["name"])
	assert.Equal(t, "seed-identity-"+f.seedName, seedValues["clusterIdentity"])
	assert.Equal(t, "local", seedValues["provider"])
	assert.Equal(t, "ingress.local", seedValues["ingressDomain"])
	assert.Equal(t, map[string]any{"env": "test"}, seedValues["labels"])
	assert.Equal(t, false, seedValues["protected"])
	assert.Equal(t, true, seedValues["visible"])
	assert.Contains(t, seedValues, "spec")

	cm, ok := configMap(t, "extension-provider-oci", "provider-oci-config")
	require.True(t, ok, "the chart's ConfigMap on the seed")
	assert.Equal(t, map[string]string{"greeting": "from the deployment", "seed": f.seedName, "gardenerVersion": "v1.150.0", "chartVersion": "0.1.0"}, cm.Data)

	ns := &corev1.Namespace{}
	require.NoError(t, seed.Client.Get(context.Background(), client.ObjectKey{Name: "extension-provider-oci"}, ns))
	assert.Equal(t, "extension", ns.Labels[v1beta1constants.GardenRole])
	assert.Equal(t, "provider-oci", ns.Labels[v1beta1constants.LabelControllerRegistrationName])
	assert.Equal(t, "a,b", ns.Annotations["high-availability-config.resources.gardener.cloud/zones"])

	requestsBefore, blobsBefore := f.registry.Requests(), f.registry.BlobDownloads()
	gardenCounts, seedCounts := f.measureBoth(func() { f.Send("update", functiontest.Touched(t, garden.Client, ci)) })
	assert.Zero(t, writes(gardenCounts), "garden requests of an unchanged reconcile: %v", gardenCounts)
	assert.Zero(t, writes(seedCounts), "seed requests of an unchanged reconcile: %v", seedCounts)
	assert.Equal(t, int64(2), f.registry.Requests()-requestsBefore, "a tag costs the registry's auth ping and one HEAD of the manifest")
	assert.Zero(t, f.registry.BlobDownloads()-blobsBefore, "the archive comes from the cache")
	rel, err = seedRelease(t, "extension-provider-oci", "provider-oci")
	require.NoError(t, err)
	assert.Equal(t, 1, rel.Version, "no Helm upgrade when nothing changed")
}

// A deployment with a rawChart is installed without any registry.
func TestInstallFromRawChart(t *testing.T) {
	f := newFixture(t)
	archive, err := ocitest.ConfigMapChart("provider-raw", "1.2.3")
	require.NoError(t, err)
	ci := f.chain(t, "provider-raw", gardencorev1beta1.HelmControllerDeployment{Chart: archive})

	f.Send("add", ci)

	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	cm, ok := configMap(t, "extension-provider-raw", "provider-raw-config")
	require.True(t, ok)
	assert.Equal(t, "hello", cm.Data["greeting"], "the chart's own default values")
	assert.Equal(t, "1.2.3", cm.Data["chartVersion"])
	assert.Zero(t, f.registry.Requests())
}

// A change of the deployment (a new chart version by digest, new values) upgrades the release,
// through the deployment's event mapped to the installation.
func TestUpgradeWhenDeploymentChanges(t *testing.T) {
	f := newFixture(t)
	refV1, _ := f.pushChart(t, "provider-up", "0.1.0")
	ci := f.chain(t, "provider-up", gardencorev1beta1.HelmControllerDeployment{
		OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(refV1), PullSecretRef: &corev1.LocalObjectReference{Name: f.pullSecret(t, true)}},
	})
	f.Send("add", ci)
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")

	_, digestV2 := f.pushChart(t, "provider-up", "0.2.0")
	deployment := &gardencorev1beta1.ControllerDeployment{}
	require.NoError(t, garden.Client.Get(context.Background(), client.ObjectKey{Name: "provider-up"}, deployment))
	changed := helmDeployment(t, "provider-up", gardencorev1beta1.HelmControllerDeployment{
		OCIRepository: &gardencorev1beta1.OCIRepository{
			Repository: ptr.To(f.registry.Host + "/charts/provider-up"), Tag: ptr.To("0.1.0"), Digest: ptr.To(digestV2), // the digest wins
			PullSecretRef: &corev1.LocalObjectReference{Name: "pull-" + f.seedName},
		},
		Values: values(t, map[string]any{"greeting": "upgraded"}),
	})
	deployment.ProviderConfig = changed.ProviderConfig
	require.NoError(t, garden.Client.Update(context.Background(), deployment))

	f.Send("update", deployment)

	rel, err := seedRelease(t, "extension-provider-up", "provider-up")
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	assert.Equal(t, release.StatusDeployed, rel.Info.Status)
	cm, ok := configMap(t, "extension-provider-up", "provider-up-config")
	require.True(t, ok)
	assert.Equal(t, "0.2.0", cm.Data["chartVersion"])
	assert.Equal(t, "upgraded", cm.Data["greeting"])
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")

	requestsBefore := f.registry.Requests()
	gardenCounts, seedCounts := f.measureBoth(func() { f.Send("update", functiontest.Touched(t, garden.Client, ci)) })
	assert.Zero(t, f.registry.Requests()-requestsBefore, "a cached digest costs the registry nothing")
	assert.Equal(t, map[string]int{"get": 4}, gardenCounts, "installation, deployment, registration, seed; no pull secret")
	assert.Equal(t, map[string]int{"list": 1}, seedCounts, "the release's records, metadata only")
}

// Deleting an installation uninstalls its release and deletes its namespace; the finalizer is
// released once the namespace is gone.
func TestDeletionUninstallsRelease(t *testing.T) {
	f := newFixture(t)
	archive, err := ocitest.ConfigMapChart("provider-del", "0.1.0")
	require.NoError(t, err)
	ci := f.chain(t, "provider-del", gardencorev1beta1.HelmControllerDeployment{Chart: archive})
	f.Send("add", ci)
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")

	require.NoError(t, garden.Client.Delete(context.Background(), get(t, ci)))
	f.Send("update", get(t, ci))

	_, err = seedRelease(t, "extension-provider-del", "provider-del")
	require.Error(t, err, "the release is uninstalled")
	_, ok := configMap(t, "extension-provider-del", "provider-del-config")
	assert.False(t, ok, "the chart's resources are deleted")
	requireCondition(t, ci, installed, isFalse, "DeletionPending")
	assert.Contains(t, get(t, ci).GetFinalizers(), controllerinstallation.FinalizerName, "held while the namespace terminates")

	finalizeNamespace(t, "extension-provider-del")
	f.Sweep("resync")

	err = garden.Client.Get(context.Background(), client.ObjectKeyFromObject(ci), &gardencorev1beta1.ControllerInstallation{})
	assert.True(t, apierrors.IsNotFound(err), "the finalizer is released: %v", err)
}

// Invalid references make the installation invalid with gardenlet's reasons.
func TestInvalidReferences(t *testing.T) {
	f := newFixture(t)
	ref, _ := f.pushChart(t, "provider-bad", "0.1.0")
	ctx := context.Background()

	t.Run("registration missing", func(t *testing.T) {
		require.NoError(t, garden.Client.Create(ctx, helmDeployment(t, "bad-registration", gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref)}})))
		ci := f.installation(t, "bad-registration", "no-such-registration", "bad-registration")
		f.Send("add", ci)
		requireCondition(t, ci, valid, isFalse, "RegistrationNotFound")
	})
	t.Run("chart not in the registry", func(t *testing.T) {
		ci := f.chain(t, "bad-tag", gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{
			Ref: ptr.To(f.registry.Host + "/charts/provider-bad:9.9.9"), PullSecretRef: &corev1.LocalObjectReference{Name: f.pullSecret(t, true)},
		}})
		code, body := f.Post(f.Event("add", ci))
		assert.Equal(t, 503, code, "a pull failure may pass: retried (%s)", body)
		requireCondition(t, ci, valid, isFalse, "OCIChartCannotBePulled")
	})
	t.Run("no credentials", func(t *testing.T) {
		ci := f.chain(t, "bad-auth", gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref)}})
		code, _ := f.Post(f.Event("add", ci))
		assert.Equal(t, 503, code)
		requireCondition(t, ci, valid, isFalse, "OCIChartCannotBePulled")
		assert.Contains(t, conditionMessage(t, ci, valid), "401")
	})
	t.Run("pull secret not labelled", func(t *testing.T) {
		secret := &corev1.Secret{}
		require.NoError(t, garden.Client.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: "pull-" + f.seedName}, secret))
		unlabelled := secret.DeepCopy()
		unlabelled.ObjectMeta = metav1.ObjectMeta{Name: "unlabelled-" + f.seedName, Namespace: v1beta1constants.GardenNamespace}
		require.NoError(t, garden.Client.Create(ctx, unlabelled))
		ci := f.chain(t, "bad-secret", gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref), PullSecretRef: &corev1.LocalObjectReference{Name: unlabelled.Name}}})
		code, _ := f.Post(f.Event("add", ci))
		assert.Equal(t, 503, code)
		requireCondition(t, ci, valid, isFalse, "OCIChartCannotBePulled")
		assert.Contains(t, conditionMessage(t, ci, valid), "is not labelled gardener.cloud/role=helm-pull-secret")
	})
	t.Run("not a chart", func(t *testing.T) {
		ci := f.chain(t, "bad-chart", gardencorev1beta1.HelmControllerDeployment{Chart: []byte("not a chart archive")})
		f.Send("add", ci)
		requireCondition(t, ci, valid, isFalse, "ChartCannotBeRendered")
	})
	t.Run("values not an object", func(t *testing.T) {
		ci := f.chain(t, "bad-values", gardencorev1beta1.HelmControllerDeployment{Chart: []byte("unused"), Values: &apiextensionsv1.JSON{Raw: []byte(`["a list"]`)}})
		f.Send("add", ci)
		requireCondition(t, ci, valid, isFalse, "ChartInformationInvalid")
	})
}

// An installation on a seed that does not exist is invalid.
func TestSeedMissing(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, garden.Client.Delete(context.Background(), &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: f.seedName}}))
	archive, err := ocitest.ConfigMapChart("provider-noseed", "0.1.0")
	require.NoError(t, err)
	ci := f.chain(t, "provider-noseed", gardencorev1beta1.HelmControllerDeployment{Chart: archive})
	f.Send("add", ci)
	requireCondition(t, ci, valid, isFalse, "SeedNotFound")
}

// The resync sweep installs what no event announced, ignores other seeds' installations, and
// with nothing changed writes nothing on either cluster and reads the seed with two LISTs.
func TestSweepResync(t *testing.T) {
	f := newFixture(t)
	ref, _ := f.pushChart(t, "provider-sweep", "0.1.0")
	ci := f.chain(t, "provider-sweep", gardencorev1beta1.HelmControllerDeployment{
		OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref), PullSecretRef: &corev1.LocalObjectReference{Name: f.pullSecret(t, true)}},
	})
	other := installationOf(t, "another-seed", "provider-sweep-elsewhere", "provider-sweep", "provider-sweep")

	f.Sweep("resync")

	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	assert.Empty(t, get(t, other).(*gardencorev1beta1.ControllerInstallation).Status.Conditions, "another seed's installation")
	_, ok := configMap(t, "extension-provider-sweep", "provider-sweep-config")
	assert.True(t, ok)

	gardenCounts, seedCounts := f.measureBoth(func() { f.Sweep("resync") })
	assert.Equal(t, map[string]int{"list": 3, "get": 2}, gardenCounts, "installations, registrations, deployments; the Seed once and the tag's pull secret")
	assert.Equal(t, map[string]int{"list": 2}, seedCounts, "the seed's namespaces and release records, once each")
}

// The function sees its seed's installations only, as gardenlet does and as Gardener's
// SeedAuthorizer lets a seed: every LIST of them on the server (its sweeps', and its mapper's
// of a deployment's installations) carries the field selector spec.seedRef.name, and an event of
// another seed's installation is dropped before any read.
func TestOnlyTheSeedsInstallations(t *testing.T) {
	var mu sync.Mutex
	var selectors []string
	f := newFixture(t, functiontest.WithRESTConfig(func(c *rest.Config) {
		c.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return testenv.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/controllerinstallations") {
					mu.Lock()
					selectors = append(selectors, req.URL.Query().Get("fieldSelector"))
					mu.Unlock()
				}
				return next.RoundTrip(req)
			})
		})
	}))
	// The distinct selectors since the last call (client-go repeats a request the server
	// answers 429, as a new CRD's may).
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Compact(slices.Sorted(slices.Values(selectors)))
		selectors = nil
		return out
	}
	own := "spec.seedRef.name=" + f.seedName
	f.Sweep("resync")
	f.Sweep("required")
	assert.Equal(t, []string{own}, seen())

	ref, _ := f.pushChart(t, "provider-scope", "0.1.0")
	ci := f.chain(t, "provider-scope", gardencorev1beta1.HelmControllerDeployment{
		OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref), PullSecretRef: &corev1.LocalObjectReference{Name: f.pullSecret(t, true)}},
	})
	other := installationOf(t, "another-seed", "provider-scope-other", "provider-scope", "provider-scope")

	deployment := &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: "provider-scope"}}
	f.Send("update", get(t, deployment))
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	assert.Equal(t, []string{"spec.registrationRef.name=provider-scope," + own}, seen(), "the mapper's LIST, within the seed")

	gardenCounts, _ := f.measureBoth(func() { f.Send("add", get(t, other)) })
	assert.Empty(t, gardenCounts, "another seed's installation: dropped before any read")
	get(t, other)
	assert.Empty(t, other.Finalizers)
	assert.Empty(t, other.Status.Conditions)
}

func conditionMessage(t testing.TB, ci *gardencorev1beta1.ControllerInstallation, ct gardencorev1beta1.ConditionType) string {
	t.Helper()
	get(t, ci)
	c := function.GetCondition(ci.Status.Conditions, ct)
	require.NotNil(t, c)
	return c.Message
}

// A release left pending (an install or upgrade in progress, or interrupted) is reported and
// left alone; once it has been pending for longer than HELM_PENDING_STALE_AFTER it counts as
// interrupted and is upgraded.
func TestPendingReleaseIsTakenOverWhenStale(t *testing.T) {
	f := newFixture(t)
	archive, err := ocitest.ConfigMapChart("provider-pending", "0.1.0")
	require.NoError(t, err)
	ci := f.chain(t, "provider-pending", gardencorev1beta1.HelmControllerDeployment{Chart: archive})
	f.Send("add", ci)
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")

	// Interrupt: the latest record says an upgrade is in progress.
	cs, err := kubernetes.NewForConfig(seed.Config)
	require.NoError(t, err)
	store := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets("extension-provider-pending")))
	last, err := store.Last("provider-pending")
	require.NoError(t, err)
	last.SetStatus(release.StatusPendingUpgrade, "upgrade in progress")
	require.NoError(t, store.Update(last))

	deployment := &gardencorev1beta1.ControllerDeployment{}
	require.NoError(t, garden.Client.Get(context.Background(), client.ObjectKey{Name: "provider-pending"}, deployment))
	deployment.ProviderConfig = helmDeployment(t, "provider-pending", gardencorev1beta1.HelmControllerDeployment{Chart: archive, Values: values(t, map[string]any{"greeting": "after"})}).ProviderConfig
	require.NoError(t, garden.Client.Update(context.Background(), deployment))

	f.Send("update", deployment)
	requireCondition(t, ci, installed, isFalse, "InstallationPending")
	requireCondition(t, ci, progressing, isTrue, "ControllerNotRolledOut")
	rel, err := seedRelease(t, "extension-provider-pending", "provider-pending")
	require.NoError(t, err)
	assert.Equal(t, 1, rel.Version, "left to the reconcile that is installing it")

	f.Clock.Step(6 * time.Minute)
	f.Send("update", deployment)
	rel, err = seedRelease(t, "extension-provider-pending", "provider-pending")
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	assert.Equal(t, release.StatusDeployed, rel.Info.Status)
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	cm, ok := configMap(t, "extension-provider-pending", "provider-pending-config")
	require.True(t, ok)
	assert.Equal(t, "after", cm.Data["greeting"])
}
