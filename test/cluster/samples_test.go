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
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
)

// The samples of `make run` (pkg/landscape/samples) on the deployed system: the cluster plays the
// garden and the seed (controllerinstallation's SEED_NAME is the samples' Seed), a second
// kube-apiserver the landscape's shoot, and the sample chart comes from an OCI registry the
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
	require.NoError(t, samples.Create(ctx, c, chartRef))
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
		{"registration chain", samples.RegistrationChain{Garden: c, Seed: c}.Line},
		{"network policy", samples.NetworkPolicyLine(c)},
		{"GRM", grm.Line},
		{"GRM node", (&samples.ShootNodes{Shoot: shoot.env.Client, Seed: c, Kubelet: kubelet}).Line},
	} {
		name, line := l.name, l.line
		took := eventually(t, 4*time.Minute, name, func() error {
			if l := line(); !samples.Done(l) {
				return errorString(l)
			}
			return nil
		})
		t.Logf("%s complete %s after the samples were created (waited %s): %s", name, time.Since(start).Round(time.Second), took.Round(time.Second), strings.ReplaceAll(line(), "\n", " | "))
	}
	require.Positive(t, registry.BlobDownloads(), "the chart was pulled from the suite's registry")
}

// errorString is a live line as the reason a wait goes on.
type errorString string

func (e errorString) Error() string { return string(e) }
