package cluster_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// The samples of `make run` (pkg/landscape/samples) on the deployed system: each in its cluster,
// Gardener's API in the virtual garden, the Extensions and the resource manager's objects in the
// cluster, which is the runtime cluster and the seed (controllerinstallation's SEED_NAME is the
// samples' Seed), a second kube-apiserver the landscape's shoot, and the sample chart comes from an OCI registry the
// suite serves on the pods' gateway. Every live line of `make run` (the extension registration
// chain down to the Helm release, the network policies, GRM's ManagedResource, token requestor,
// node, token invalidator and CSR approver) reaches its complete state, driven by events: no
// sweep here runs more often than its schedule on a seed.
func TestSamples(t *testing.T) {
	ctx := context.Background()
	shoot := startShoot(t, landscape.Tenant)
	registry, chartRef, err := landscape.StartChartRegistry(net.JoinHostPort(os.Getenv("CLUSTER_POD_GATEWAY"), "0"))
	require.NoError(t, err)
	t.Cleanup(registry.Close)
	kubelet, err := shoot.env.As("system:node:"+samples.NodeName, "system:nodes")
	require.NoError(t, err)

	start := time.Now()
	// In the scale-to-zero variant the first create may wake grm-webhooks from zero, and
	// kube-apiserver waits for a webhook at most 30 s: on a loaded node the pod may take longer,
	// and the fail-closed webhook then refuses, as it must (seen once). So a dry-run request
	// wakes it first, until grm-webhooks answers (TestAdmissionFromZero times admission from
	// zero); its answer, allowed or not, is no concern here.
	woken := eventually(t, 2*time.Minute, "grm-webhooks answers", func() error {
		err := c.Create(ctx, &extensionsv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "wake-up"}}, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
			return err
		}
		return nil
	})
	t.Logf("grm-webhooks answered within %s", woken.Round(time.Millisecond))
	writer := &webhookRetrying{Client: c, t: t}
	require.NoError(t, samples.Create(ctx, samples.Clusters{Garden: garden, Runtime: writer}, chartRef))
	t.Logf("samples created in %s; %d writes retried after a webhook was not reached", time.Since(start).Round(time.Second), writer.retried)
	grm := &samples.GRM{Seed: c, Shoot: shoot.env.Client}
	t.Cleanup(func() {
		// The ManagedResource goes before the shoot does, so that nothing is left retrying.
		// Its objects stay in the shoot (keepObjects): GRM deletes them in the foreground, which
		// a shoot without a garbage collector never completes.
		mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: string(landscape.Tenant), Name: samples.GRMName}}
		require.NoError(t, c.Patch(ctx, mr, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"keepObjects":true}}`))))
		deleteManagedResource(t, mr)
	})
	for _, l := range []struct {
		name string
		line func() string
	}{
		{"registration chain", samples.RegistrationChain{Garden: garden, Runtime: c, Seed: c}.Line},
		{"network policy", samples.NetworkPolicyLine(c)},
		{"GRM", grm.Line},
		{"GRM node", (&samples.ShootNodes{Shoot: shoot.env.Client, Seed: c, Kubelet: kubelet}).Line},
	} {
		name, line := l.name, l.line
		var done string // the line as checked, not as read again later
		took := eventually(t, lineWait, name, func() error {
			if done = line(); !samples.Done(done) {
				return errorString(done)
			}
			return nil
		})
		t.Logf("%s complete %s after the samples were created (waited %s): %s", name, time.Since(start).Round(time.Second), took.Round(time.Second), strings.ReplaceAll(done, "\n", " | "))
	}
	require.Positive(t, registry.BlobDownloads(), "the chart was pulled from the suite's registry")
}

// lineWait bounds the wait for one live line. Events are hints: a source may drop one after its
// retries (seen once, CI of fd653ed: the token invalidator's Secret event on a node so loaded that
// the samples took 3 min 35 s to create), and the functions' sweeps catch what was lost within
// their period. The longest period among these lines' functions is the token invalidator's
// (5 min), so each line waits one of it and a minute more.
const lineWait = 6 * time.Minute

// webhookRetrying writes as gardenlet and the operators' clients do: a write that kube-apiserver
// refused because it could not reach a fail-closed webhook ("failed calling webhook": nothing
// was written) is sent again, a bounded number of times. The woken grm-webhooks scales to zero
// again while the samples before the first of its kinds are created (Knative's stable window is
// 60 s); the next cold start, beside every function waking for the samples' events on two cores,
// once took longer than kube-apiserver's 30 s (CI of 8804482). Admission from zero is
// TestAdmissionFromZero's concern; the samples' lines are this test's.
type webhookRetrying struct {
	client.Client
	t       *testing.T
	retried int
}

// webhookAttempts bounds the sends of one write: the first wakes the webhook's pod, which then
// answers the next.
const webhookAttempts = 3

func (w *webhookRetrying) send(obj client.Object, write func() error) error {
	var err error
	for range webhookAttempts {
		if err = write(); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			return err
		}
		w.retried++
		w.t.Logf("%T %s: sent again: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
	return err
}

func (w *webhookRetrying) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return w.send(obj, func() error { return w.Client.Create(ctx, obj, opts...) })
}

func (w *webhookRetrying) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return w.send(obj, func() error { return w.Client.Update(ctx, obj, opts...) })
}

func (w *webhookRetrying) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return w.send(obj, func() error { return w.Client.Patch(ctx, obj, patch, opts...) })
}

// errorString is a live line as the reason a wait goes on.
type errorString string

func (e errorString) Error() string { return string(e) }

// Every Gardener object the suite leaves is where Gardener keeps it: Gardener's API in the
// virtual garden, the runtime cluster's and the seed's kinds (gardener-operator's Extensions,
// extensions', etcd-druid's, machine-controller-manager's) in the one-node cluster. The stand-in
// CRDs are installed in both (hack/cluster.sh up), so a function that wrote an object into the
// wrong cluster would have succeeded and is found here. It runs after the samples, which set every
// function to work.
func TestGardenerObjectsWhereGardenerKeepsThem(t *testing.T) {
	crds, err := testenv.GardenerCRDs()
	require.NoError(t, err)
	inGarden := map[string]bool{"core.gardener.cloud": true, "operations.gardener.cloud": true, "security.gardener.cloud": true, "seedmanagement.gardener.cloud": true}
	found := map[string]int{}
	for _, crd := range crds {
		right, wrong, where := garden, c, "the runtime cluster"
		if !inGarden[crd.Spec.Group] {
			right, wrong, where = c, garden, "the garden"
		}
		version := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				version = v.Name
			}
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind}
		count := func(cl client.Client) []string {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk)
			require.NoError(t, cl.List(context.Background(), list), "%s", gvk)
			var names []string
			for _, o := range list.Items {
				names = append(names, client.ObjectKeyFromObject(&o).String())
			}
			return names
		}
		assert.Empty(t, count(wrong), "%s of %s in %s", crd.Spec.Names.Kind, crd.Spec.Group, where)
		found[crd.Spec.Group] += len(count(right))
	}
	t.Logf("Gardener objects where they belong, by group: %v", found)
	for _, group := range []string{"core.gardener.cloud", "operator.gardener.cloud", "extensions.gardener.cloud"} {
		assert.Positive(t, found[group], "the samples left objects of %s: the check looked where they are", group)
	}
}
