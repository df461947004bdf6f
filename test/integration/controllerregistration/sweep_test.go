package controllerregistration_test

import (
	"fmt"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seed"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// TestSeedSweep: the sweep creates every seed's installations without any event, a second
// sweep with nothing changed writes nothing, and its LISTs do not grow with the number of seeds.
func TestSeedSweep(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	f.providerRegistration("aws")
	f.providerRegistration("gcp")
	f.registration("os", "", resource{Kind: "OperatingSystemConfig", Type: "gardenlinux"})
	f.registration("always", gardencorev1beta1.ControllerDeploymentPolicyAlways, resource{Kind: "Extension", Type: "always"})
	f.registration("unused", "", resource{Kind: "Extension", Type: "unused"})

	seeds := 0
	steadySweep := func(total int) map[string]int {
		for ; seeds < total; seeds++ {
			s := f.seed(fmt.Sprintf("seed%d", seeds), "aws")
			for i := range 3 {
				f.shoot(fmt.Sprintf("s%d-%d", seeds, i), s.Name, "gcp", "gardenlinux")
			}
		}
		f.Sweep(seed.SweepName)
		for i := range total {
			assert.Equal(t, []string{"always", "os", "provider-aws", "provider-gcp"}, f.registrationNames(f.name(fmt.Sprintf("seed%d", i))))
		}
		return f.Measure(func() { f.Sweep(seed.SweepName) })
	}

	two := steadySweep(2)
	assert.Zero(t, two["create"]+two["patch"]+two["delete"], "nothing changed, nothing written: %v", two)
	six := steadySweep(6)
	assert.Zero(t, six["create"]+six["patch"]+six["delete"], "nothing changed, nothing written: %v", six)
	require.NotZero(t, two["list"])
	assert.Equal(t, two["list"], six["list"], "one LIST per kind, however many seeds")
	assert.Zero(t, six["get"], "every read is answered by the snapshot")
}
