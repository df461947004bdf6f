package bastion_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// The function runs as its own ServiceAccount with the RBAC config/bastion.yaml grants (from
// its declaration): every path (events, the Shoot mapping, the sweep, deletes) must work with
// exactly that, and writes it does not need must be refused.
func TestRunsWithTheRBACOfConfig(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, functiontest.AsFunction())
	hour := time.Hour
	s := f.shoot(t, "shoot", "seed-a")
	expired := f.bastion(t, "expired", "shoot", "seed-a", &hour)
	orphan := f.bastion(t, "orphan", "gone", "seed-a", &hour)
	migrating := f.bastion(t, "migrating", "shoot", "seed-a", &hour)
	f.Clock.Step(2 * hour)

	f.Send("add", expired)
	assert.False(t, exists(t, expired))
	f.Sweep("resync")
	assert.False(t, exists(t, orphan))
	s.Spec.SeedName = ptr.To("seed-b")
	require.NoError(t, env.Client.Update(ctx, s))
	f.Send("update", s)
	assert.False(t, exists(t, migrating))

	c, _, err := env.CountingClient("system:serviceaccount:gardener-knative:bastion")
	require.NoError(t, err)
	err = c.Update(ctx, s)
	assert.True(t, apierrors.IsForbidden(err), "the function may not write Shoots, got %v", err)
}
