// Package e2e runs the function binaries as processes against a real kube-apiserver and etcd,
// fed by the real cluster sources and Knative's PingSource runner (in-process), and watches them
// converge the cluster.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

var (
	land *landscape.Landscape
	logs syncBuffer
)

// noSweep is a schedule that never fires while a test runs, so that only events can act.
const noSweep = "0 0 1 1 *"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gardener-knative-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// make run's settings (the features Gardener leaves off, on), and the bastion function's
	// debug log.
	env := maps.Clone(landscape.Settings)
	env["bastion"] = append(slices.Clone(env["bastion"]), "LOG_LEVEL=debug")
	land, err = landscape.Start(context.Background(), landscape.Options{
		Dir:            dir,
		FunctionOutput: func(string) io.Writer { return &logs },
		Env:            env,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "function logs:\n%s\n", logs.String())
	}
	if err := land.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func startSources(t *testing.T, schedules map[string]string) {
	t.Helper()
	require.NoError(t, land.StartSources(context.Background(), schedules))
	t.Cleanup(func() { require.NoError(t, land.StopSources()) })
}

// startSourcesAndWaitForTheShootWatch starts the sources and returns once the source delivers
// Shoot events: each watch starts after an initial LIST that produces no event, and the source
// gives no other sign. A canary Bastion created before the sources got no event of its own; its
// Shoot is moved to another seed, again and again, until the Shoot's event takes the Bastion.
// (Each kind's watch starts on its own: the Bastion watch may run before the Shoot watch, so a
// Bastion's disappearance alone proves nothing about Shoots.)
func startSourcesAndWaitForTheShootWatch(t *testing.T, schedules map[string]string) {
	t.Helper()
	ns := namespace(t)
	shoot := createShoot(t, ns, "canary-shoot")
	canary := createBastion(t, ns, "canary", shoot.Name, time.Now().Add(time.Hour))
	startSources(t, schedules)
	touchUntil(t, shoot, func(i int) { shoot.Spec.SeedName = ptr.To(fmt.Sprintf("elsewhere-%d", i)) }, gone(canary),
		"the source delivered no Shoot event")
}

// touchUntil waits for condition, changing obj with touch every half second while it does not
// hold: the cluster source starts its watches after an initial LIST without any sign,
// and an object changed before its watch ran caused no event; the next change is one.
func touchUntil(t *testing.T, obj client.Object, touch func(i int), condition func() bool, msg string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; !eventually(condition, 500*time.Millisecond); i++ {
		require.Less(t, i, 60, "%s within 30s", msg)
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		touch(i)
		require.NoError(t, land.Env.Client.Patch(ctx, obj, patch))
	}
}

func eventually(condition func() bool, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if condition() {
			return true
		}
	}
	return false
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garden-e2e-"}}
	require.NoError(t, land.Env.Client.Create(context.Background(), ns))
	return ns.Name
}

func createShoot(t *testing.T, ns, name string) *gardencorev1beta1.Shoot {
	t.Helper()
	ctx := context.Background()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	s.Spec.SeedName = ptr.To("local")
	require.NoError(t, land.Env.Client.Create(ctx, s))
	s.Status.SeedName = ptr.To("local") // scheduled and reconciled there, as gardenlet reports
	require.NoError(t, land.Env.Client.Status().Update(ctx, s))
	return s
}

func createBastion(t *testing.T, ns, name, shoot string, expiresAt time.Time) *operationsv1alpha1.Bastion {
	t.Helper()
	ctx := context.Background()
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	b.Spec.ShootRef.Name = shoot
	b.Spec.SeedName = ptr.To("local")
	require.NoError(t, land.Env.Client.Create(ctx, b))
	b.Status.ExpirationTimestamp = &metav1.Time{Time: expiresAt}
	require.NoError(t, land.Env.Client.Status().Update(ctx, b))
	return b
}

func gone(b *operationsv1alpha1.Bastion) func() bool {
	return func() bool {
		err := land.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &operationsv1alpha1.Bastion{})
		return apierrors.IsNotFound(err)
	}
}

func TestShootDeletionTakesItsBastionThroughEvents(t *testing.T) {
	startSourcesAndWaitForTheShootWatch(t, map[string]string{"bastion-resync": noSweep})
	ns := namespace(t)
	shoot := createShoot(t, ns, "shoot")
	b := createBastion(t, ns, "bastion", "shoot", time.Now().Add(time.Hour))
	createShoot(t, ns, "other-shoot")
	other := createBastion(t, ns, "other", "other-shoot", time.Now().Add(time.Hour))

	require.NoError(t, land.Env.Client.Delete(context.Background(), shoot))
	require.Eventually(t, gone(b), 20*time.Second, 100*time.Millisecond, "the Shoot's delete event must take its Bastion")
	assert.False(t, gone(other)(), "a Bastion of another Shoot stays")
}

func TestSweepDeletesExpiredBastion(t *testing.T) {
	startSources(t, map[string]string{"bastion-resync": "*/1 * * * * *"})
	ns := namespace(t)
	createShoot(t, ns, "shoot")
	expiring := createBastion(t, ns, "expiring", "shoot", time.Now().Add(2*time.Second))
	live := createBastion(t, ns, "live", "shoot", time.Now().Add(time.Hour))

	require.Eventually(t, gone(expiring), 20*time.Second, 100*time.Millisecond, "the sweep must delete the expired Bastion")
	assert.False(t, gone(live)(), "a live Bastion stays")
}

// The cluster source does not replay objects that exist when it starts: only the sweep can find
// a Bastion orphaned before the source ran.
func TestSweepConvergesObjectsThatExistedBeforeTheSources(t *testing.T) {
	ns := namespace(t)
	orphan := createBastion(t, ns, "orphan", "never-existed", time.Now().Add(time.Hour))
	createShoot(t, ns, "shoot")
	live := createBastion(t, ns, "live", "shoot", time.Now().Add(time.Hour))

	startSources(t, map[string]string{"bastion-resync": "*/1 * * * * *"})
	require.Eventually(t, gone(orphan), 20*time.Second, 100*time.Millisecond, "the sweep must delete the orphan")
	assert.False(t, gone(live)())
}

// syncBuffer collects the functions' output from several processes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
