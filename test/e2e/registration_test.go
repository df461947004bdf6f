package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/sources"
)

// The registration chain across three functions and two clusters, driven by events alone: an
// Extension becomes a ControllerRegistration and a ControllerDeployment (extension), a Shoot on
// the seed enabling its type makes it required there and a ControllerInstallation appears
// (controllerregistration), and the chart from the in-process OCI registry is installed as a
// Helm release into the second control plane standing for the seed (controllerinstallation).
// Deleting the Shoot deletes the installation, which uninstalls the release and deletes its
// namespace; the installation's finalizer goes with the next resync sweep, since a namespace's
// end on the seed is no event in the garden.
func TestRegistrationChainInstallsTheExtensionOnTheSeed(t *testing.T) {
	ctx := context.Background()
	garden, seed := land.Env.Client, land.Seed.Client
	prepareSeed(t)
	startSources(t, noSweeps())

	name := "e2e-" + utilrand.String(5)
	extensionType := name
	ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: extensionType}}
	ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
		DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{
			OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To(land.SampleChartRef)},
		}},
		Policy: ptr.To(gardencorev1beta1.ControllerDeploymentPolicyOnDemand),
	}}
	require.NoError(t, garden.Create(ctx, ext))
	t.Cleanup(func() { _ = garden.Delete(ctx, ext) })
	touchUntil(t, ext, annotate(ext), func() bool {
		return exists(garden, &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}) &&
			exists(garden, &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}, "the Extension becomes a ControllerRegistration and a ControllerDeployment")
	require.Nil(t, installationOf(t, name), "OnDemand: nothing on the seed requires it yet")

	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "uses-" + name, Namespace: namespace(t)}}
	shoot.Spec.SeedName = ptr.To(landscape.SeedName)
	shoot.Spec.Provider.Type = "local"
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "local", Minimum: 1, Maximum: 1, Machine: gardencorev1beta1.Machine{Type: "local"}}}
	shoot.Spec.Extensions = []gardencorev1beta1.Extension{{Type: extensionType}}
	require.NoError(t, garden.Create(ctx, shoot))
	shoot.Status.SeedName = ptr.To(landscape.SeedName) // scheduled and reconciled there, as gardenlet reports
	require.NoError(t, garden.Status().Update(ctx, shoot))
	var ci *gardencorev1beta1.ControllerInstallation
	touchUntil(t, shoot, annotate(shoot), func() bool { ci = installationOf(t, name); return ci != nil },
		"the Shoot makes the registration required on the seed: a ControllerInstallation appears")
	require.NotNil(t, ci.Spec.DeploymentRef)
	require.Equal(t, name, ci.Spec.DeploymentRef.Name)

	releaseNamespace := controllerinstallation.NamespaceName(ci)
	releaseRecord := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "sh.helm.release.v1." + name + ".v1"}}
	chartConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: name + "-config"}}
	require.True(t, eventually(func() bool {
		return exists(seed, releaseRecord) && releaseRecord.Labels["status"] == "deployed" && exists(seed, chartConfigMap)
	}, 30*time.Second), "the chart is installed as a Helm release on the seed")
	require.Equal(t, landscape.SeedName, chartConfigMap.Data["seed"], "rendered with the values gardenlet injects")
	require.True(t, eventually(func() bool {
		current := installationOf(t, name)
		if current == nil {
			return false
		}
		installed := function.GetCondition(current.Status.Conditions, gardencorev1beta1.ControllerInstallationInstalled)
		return installed != nil && installed.Status == gardencorev1beta1.ConditionTrue
	}, 10*time.Second), "the installation reports Installed")

	require.NoError(t, garden.Delete(ctx, shoot))
	require.True(t, eventually(func() bool {
		return !exists(seed, releaseRecord) && !exists(seed, chartConfigMap) && !exists(seed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}})
	}, 30*time.Second), "the Shoot's deletion uninstalls the release and deletes its namespace")
	url := land.URLs["controllerinstallation"]
	var sweep string // the last sweep's answer, for the failure message
	for i := 0; installationOf(t, name) != nil; i++ {
		require.Less(t, i, 20, "the installation is gone; the last resync answered %s", sweep)
		// The resync sweep, sent as its PingSource would, releases the finalizer.
		ping := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": fmt.Sprintf("e2e-%s-%d", name, i), "Ce-Source": "e2e", "Ce-Type": "dev.knative.sources.ping",
			"Authorization": "Bearer " + senderToken(t, "controllerinstallation")}
		code, body := call(t, http.MethodPost, url, ping, sources.PingData("resync"))
		sweep = fmt.Sprintf("%d %s", code, body)
		eventually(func() bool { return installationOf(t, name) == nil }, time.Second)
	}
}

// prepareSeed creates the Seed the landscape's second control plane stands for, with the
// cluster identity gardenlet would have set, and a ControllerRegistration (without deployment:
// nothing to install) serving what the seed and its Shoots of provider "local" require for
// themselves, so that the controllerregistration function does not refuse the seed.
func prepareSeed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: landscape.SeedName}}
	seed.Spec.Provider = gardencorev1beta1.SeedProvider{Type: "local", Region: "local"}
	seed.Spec.Networks = gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", Services: "10.2.0.0/16"}
	if err := land.Env.Client.Create(ctx, seed); err == nil {
		seed.Status.ClusterIdentity = ptr.To(landscape.SeedName + "-identity")
		require.NoError(t, land.Env.Client.Status().Update(ctx, seed))
	} else {
		require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	}
	provider := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-provider-local"}}
	for _, kind := range []string{"ControlPlane", "Infrastructure", "Worker"} {
		provider.Spec.Resources = append(provider.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: kind, Type: "local"})
	}
	require.NoError(t, client.IgnoreAlreadyExists(land.Env.Client.Create(ctx, provider)))
}

// noSweeps turn every sweep off, so that only events act.
func noSweeps() map[string]string {
	schedules := map[string]string{}
	for _, fn := range functions.All {
		for _, sw := range fn.Sweeps {
			schedules[sources.PingSourceName(fn.Name, sw.Name)] = noSweep
		}
	}
	return schedules
}

// annotate touches obj with an annotation only: an update event that changes nothing else.
func annotate(obj client.Object) func(i int) {
	return func(i int) { obj.SetAnnotations(map[string]string{"e2e.gardener-knative.io/touch": fmt.Sprint(i)}) }
}

// installationOf is the ControllerInstallation of the registration on the landscape's seed, nil
// when there is none.
func installationOf(t *testing.T, registration string) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	list := &gardencorev1beta1.ControllerInstallationList{}
	require.NoError(t, land.Env.Client.List(context.Background(), list, client.MatchingFields{"spec.registrationRef.name": registration}))
	for i := range list.Items {
		if ref := list.Items[i].Spec.SeedRef; ref != nil && ref.Name == landscape.SeedName {
			return &list.Items[i]
		}
	}
	return nil
}

// exists reads obj into itself and says whether it exists.
func exists(c client.Client, obj client.Object) bool {
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	return err == nil
}
