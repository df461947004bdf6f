package webhooks_test

import (
	"context"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	utilclock "k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

// BenchmarkHighAvailabilityConfigReads answers a Deployment of a server in a zoned namespace
// with the handler's three reads going to the envtest kube-apiserver (no client-side rate
// limit), uncached (TTL 0) and through the shared cache (default TTL): what the cache saves
// per request on a warm namespace.
func BenchmarkHighAvailabilityConfigReads(b *testing.B) {
	cfg := rest.CopyConfig(target.Config)
	cfg.QPS, cfg.Burst = -1, 0
	reader, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	require.NoError(b, err)
	ns := haBenchNamespace(b)
	d := haDeployment(ns, "server", 1, haLabels(map[string]string{resourcesv1alpha1.HighAvailabilityConfigType: "server"}), nil)
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	req := webhooktest.Request(b, admissionv1.Create, d, nil)
	for _, bc := range []struct {
		name string
		ttl  time.Duration
	}{{"uncached", 0}, {"cached", highavailabilityconfig.DefaultCacheTTL}} {
		b.Run(bc.name, func(b *testing.B) {
			h, err := highavailabilityconfig.Handler(reader, testHAConfig(), utilclock.RealClock{}, bc.ttl, webhooktest.Log)
			require.NoError(b, err)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 {
					b.Fatalf("not mutated: %+v", resp.Result)
				}
			}
		})
	}
}

// haBenchNamespace is a namespace with a zone failure tolerance over three zones, removed when
// the benchmark ends.
func haBenchNamespace(b *testing.B) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ha-bench-", Annotations: map[string]string{
		resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: "zone",
		resourcesv1alpha1.HighAvailabilityConfigZones:                "a,b,c",
	}}}
	require.NoError(b, target.Client.Create(context.Background(), ns))
	b.Cleanup(func() { _ = target.Client.Delete(context.Background(), ns) })
	return ns.Name
}

func testHAConfig() rmv1alpha1.HighAvailabilityConfigWebhookConfig {
	return rmv1alpha1.HighAvailabilityConfigWebhookConfig{
		Enabled:                             true,
		DefaultNotReadyTolerationSeconds:    ptrTo(haNotReadySeconds),
		DefaultUnreachableTolerationSeconds: ptrTo(haUnreachableSeconds),
	}
}
