package extension_test

import (
	"context"
	"fmt"
	"testing"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/registration"
	requiredruntime "github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/runtime"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/virtual"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// BenchmarkSweeps100Extensions measures each sweep over 100 reconciled Extensions (with their
// registrations and 3 ControllerInstallations each) when nothing changed: requests by verb per
// sweep, as the function's ServiceAccount.
func BenchmarkSweeps100Extensions(b *testing.B) {
	h := functiontest.New(b, env, extension.Function, functiontest.AsFunction(), functiontest.At(start))
	ctx := context.Background()
	for i := range 100 {
		name := fmt.Sprintf("bench-%03d", i)
		ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name}}
		ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: name}, {Kind: "DNSRecord", Type: name}}
		ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
			DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To(ociRef)}}},
		}}
		require.NoError(b, env.Client.Create(ctx, ext))
		for seed := range 3 {
			ci := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-seed-%d", name, seed)}}
			ci.Spec.RegistrationRef.Name = name
			ci.Spec.SeedRef = &corev1.ObjectReference{Name: fmt.Sprintf("seed-%d", seed)}
			require.NoError(b, env.Client.Create(ctx, ci))
		}
	}
	sweeps := []string{registration.ResyncSweepName, requiredruntime.SweepName, virtual.SweepName}
	for _, sweep := range sweeps {
		h.Sweep(sweep) // converge, and warm up discovery
	}
	for _, sweep := range sweeps {
		b.Run(sweep, func(b *testing.B) {
			var counts map[string]int
			for b.Loop() {
				counts = h.Measure(func() { h.Sweep(sweep) })
			}
			for _, verb := range []string{"get", "list", "create", "patch", "delete"} {
				b.ReportMetric(float64(counts[verb]), verb+"/sweep")
			}
		})
	}
}
