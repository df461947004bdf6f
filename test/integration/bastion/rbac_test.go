package bastion_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The function runs as its own ServiceAccount with the RBAC of config/bastion.yaml: every
// path (events, the Shoot mapping, the sweep, deletes) must work with exactly that, and
// writes it does not need must be refused.
func TestRunsWithTheRBACOfConfig(t *testing.T) {
	ctx := context.Background()
	applyRBAC(t, "../../../config/bastion.yaml")

	f := newFixture(t, "system:serviceaccount:gardener-knative:bastion")
	hour := time.Hour
	s := f.shoot(t, "shoot", "seed-a")
	expired := f.bastion(t, "expired", "shoot", "seed-a", &hour)
	orphan := f.bastion(t, "orphan", "gone", "seed-a", &hour)
	migrating := f.bastion(t, "migrating", "shoot", "seed-a", &hour)
	f.clock.Step(2 * hour)

	f.sendBastion(t, expired)
	assert.False(t, exists(t, expired))
	f.sweep(t)
	assert.False(t, exists(t, orphan))
	s.Spec.SeedName = ptr.To("seed-b")
	require.NoError(t, env.Client.Update(ctx, s))
	f.sendShoot(t, "dev.knative.apiserver.ref.update", s)
	assert.False(t, exists(t, migrating))

	err := f.c.Update(ctx, s)
	assert.True(t, apierrors.IsForbidden(err), "the function may not write Shoots, got %v", err)
}

// applyRBAC creates the ServiceAccounts, ClusterRoles and ClusterRoleBindings of a manifest.
func applyRBAC(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gardener-knative"}}
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, ns)))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	applied := 0
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, u)), "%s %s", u.GetKind(), u.GetName())
			applied++
		}
	}
	require.NotZero(t, applied, "%s holds no RBAC", path)
}
