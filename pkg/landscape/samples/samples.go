// Package samples are every function's sample objects, which show it at work in `make run`
// (hack/landscape) and on the one-node cluster (test/cluster), and the live lines that follow
// their outcomes through the API servers.
package samples

import (
	"context"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clusters are where the samples go, each object where Gardener keeps it: Garden is Gardener's
// API (a virtual garden in a landscape); Runtime the garden runtime cluster, where
// gardener-operator's Extensions are, which is also the seed whose shoots the resource manager's
// functions serve (Gardener's "runtime cluster as seed"). `make run` has one cluster for both.
type Clusters struct {
	Garden, Runtime client.Client
}

// sample creates the objects that show a function at work.
type sample func(ctx context.Context, c Clusters) error

// inGarden and inRuntime are samples whose objects are all in one cluster.
func inGarden(create func(context.Context, client.Client) error) sample {
	return func(ctx context.Context, c Clusters) error { return create(ctx, c.Garden) }
}

func inRuntime(create func(context.Context, client.Client) error) sample {
	return func(ctx context.Context, c Clusters) error { return create(ctx, c.Runtime) }
}

// all are, per function, the samples that show it at work in `make run` and on the one-node
// cluster; each lives in samples_<function>.go beside this file. chartRef is the OCI reference
// of the landscape's sample chart, which the registration chain's Extensions install.
func all(chartRef string) []sample {
	return []sample{
		inGarden(bastionSamples),
		inGarden(secretbindingSamples),
		inGarden(credentialsbindingSamples),
		inGarden(shootSamples),
		inGarden(shootStatusSamples),
		inGarden(shootHibernationSamples),
		inGarden(seedSamples),
		inGarden(cloudprofileSamples),
		inGarden(namespacedcloudprofileSamples),
		inGarden(controllerdeploymentSamples(chartRef)),
		inGarden(controllerregistrationSamples),
		controllerinstallationSamples(chartRef),
		inRuntime(extensionSamples(chartRef)),
		inGarden(exposureclassSamples),
		inGarden(quotaSamples),
		inGarden(projectSamples),
		inGarden(projectStaleSamples),
		inGarden(eventSamples),
		inGarden(certificatesigningrequestSamples),
		inGarden(managedseedsetSamples),
		inRuntime(managedresourceSamples),
		inRuntime(networkpolicySamples),
	}
}

// Create creates every function's samples, each in its cluster, with chartRef as the sample
// chart's OCI reference (landscape.SampleChartName:SampleChartVersion in a registry the functions
// reach).
func Create(ctx context.Context, c Clusters, chartRef string) error {
	for _, create := range all(chartRef) {
		if err := create(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// bastionSamples creates a project namespace with a Shoot and Bastions that show each way the
// bastion function acts: one already expired, one whose Shoot does not exist, one that
// expires two minutes after start and one that lives on.
func bastionSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-bastion"
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		return err
	}
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns}}
	shoot.Spec.SeedName = ptr.To("local")
	if err := c.Create(ctx, shoot); err != nil {
		return err
	}
	now := time.Now()
	for _, sample := range []struct {
		name, shoot string
		expires     time.Time
	}{
		{"expired", "local", now.Add(-time.Minute)},
		{"orphan", "deleted-long-ago", now.Add(time.Hour)},
		{"expires-in-2m", "local", now.Add(2 * time.Minute)},
		{"live", "local", now.Add(12 * time.Hour)},
	} {
		b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: sample.name, Namespace: ns}}
		b.Spec.ShootRef.Name = sample.shoot
		b.Spec.SeedName = ptr.To("local")
		if err := c.Create(ctx, b); err != nil {
			return err
		}
		b.Status.ExpirationTimestamp = &metav1.Time{Time: sample.expires}
		if err := setStatus(ctx, c, b); err != nil {
			return err
		}
	}
	return nil
}

// setStatus writes obj's status as its owner (gardenlet, a kubelet) would. The functions may
// have written the object since the sample created it (they run while samples are created on a
// cluster, or in test/chaos): on a conflict, the status goes onto the latest version.
func setStatus(ctx context.Context, c client.Client, obj client.Object) error {
	desired, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := c.Status().Update(ctx, obj)
		if !apierrors.IsConflict(err) {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		latest, convErr := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if convErr != nil {
			return convErr
		}
		latest["status"] = desired["status"]
		if convErr := runtime.DefaultUnstructuredConverter.FromUnstructured(latest, obj); convErr != nil {
			return convErr
		}
		return err
	})
}

// Done tells whether a live line shows its samples' outcomes complete: the lines mark each step
// still pending with "…", a failed read with "? (<error>)" and each part done with "✓".
func Done(line string) bool {
	if strings.Contains(line, "…") || strings.Contains(line, "? (") {
		return false
	}
	for _, part := range strings.Split(line, "\n") {
		if !strings.Contains(part, "✓") {
			return false
		}
	}
	return true
}
