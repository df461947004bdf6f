package project_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/controller/project/stale"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

const day = 24 * time.Hour

// staleNow is the fake clock of every stale test: far enough ahead that every Project the
// package creates is older than the minimum lifetime, and the same for all of them, so that
// sweeping one test's Projects never ages another test's (the sweeps see every Project in the
// control plane) towards deletion.
var staleNow = time.Now().Add(1000 * day).Truncate(time.Second)

var gardenerDefaults = stale.Settings{MinimumLifetimeDays: 30, StaleGracePeriodDays: 14, StaleExpirationTimeDays: 90}

func newStaleHarness(t testing.TB, settings stale.Settings, options ...functiontest.Option) *functiontest.Harness {
	t.Helper()
	options = append([]functiontest.Option{functiontest.WithConfig(&project.Config{Settings: settings}), functiontest.At(staleNow)}, options...)
	return functiontest.New(t, env, project.Function, options...)
}

// newProject creates a Project with its namespace (annotated as given), as the Main reconciler
// leaves them (Ready), and removes both when the test ends.
func newProject(t testing.TB, namespaceAnnotations map[string]string) *gardencorev1beta1.Project {
	t.Helper()
	ctx := context.Background()
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{GenerateName: "st-"}}
	require.NoError(t, env.Client.Create(ctx, p))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        "garden-" + p.Name,
		Labels:      map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleProject, v1beta1constants.ProjectName: p.Name},
		Annotations: namespaceAnnotations,
	}}
	require.NoError(t, env.Client.Create(ctx, ns))
	p.Spec.Namespace = ptr.To(ns.Name)
	require.NoError(t, env.Client.Update(ctx, p))
	p.Status.Phase = gardencorev1beta1.ProjectReady
	p.Status.ObservedGeneration = p.Generation
	require.NoError(t, env.Client.Status().Update(ctx, p))
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(testenv.DeleteConfirmed(ctx, env.Client, p))
		_ = client.IgnoreNotFound(env.Client.Delete(ctx, ns))
	})
	return p
}

func setStatus(t testing.TB, p *gardencorev1beta1.Project, mutate func(*gardencorev1beta1.ProjectStatus)) {
	t.Helper()
	mutate(&p.Status)
	require.NoError(t, env.Client.Status().Update(context.Background(), p))
}

// current reads the Project; nil when it is gone.
func current(t testing.TB, p *gardencorev1beta1.Project) *gardencorev1beta1.Project {
	t.Helper()
	got := &gardencorev1beta1.Project{}
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return got
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), obj))
}

// otherNamespace creates another Project's namespace, where bindings and the Shoots that use
// them live in the cases where they are not in the Project's namespace (gardener-apiserver admits
// Shoots in Projects' namespaces only).
func otherNamespace(t testing.TB) string {
	t.Helper()
	return *newProject(t, nil).Spec.Namespace
}

// credentials creates the Secret "credentials" in namespace, which bindings name.
func credentials(t testing.TB, namespace string) {
	t.Helper()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "credentials"}})
}

// usedBy creates a Shoot with workers in namespace that uses the binding configure names.
func usedBy(t testing.TB, namespace, name string, configure func(*gardencorev1beta1.ShootSpec)) {
	t.Helper()
	require.NoError(t, testenv.LocalProvider(context.Background(), env.Client))
	create(t, testenv.ShootWithWorkers(namespace, name, configure))
}

func timeOf(mt *metav1.Time) *time.Time {
	if mt == nil {
		return nil
	}
	return &mt.Time
}

func assertStale(t testing.TB, p *gardencorev1beta1.Project, since, autoDelete *time.Time) {
	t.Helper()
	got := current(t, p)
	require.NotNil(t, got, "project %s is gone", p.Name)
	for _, ts := range []struct {
		name      string
		want, got *time.Time
	}{
		{"staleSinceTimestamp", since, timeOf(got.Status.StaleSinceTimestamp)},
		{"staleAutoDeleteTimestamp", autoDelete, timeOf(got.Status.StaleAutoDeleteTimestamp)},
	} {
		if ts.want == nil {
			assert.Nil(t, ts.got, "%s of %s", ts.name, p.Name)
			continue
		}
		if assert.NotNil(t, ts.got, "%s of %s", ts.name, p.Name) {
			assert.True(t, ts.want.Equal(*ts.got), "%s of %s: want %v, got %v", ts.name, p.Name, ts.want, ts.got)
		}
	}
}

func TestStaleSweep(t *testing.T) {
	// The function runs as its own ServiceAccount with the RBAC it declares.
	h := newStaleHarness(t, gardenerDefaults, functiontest.AsFunction())
	at := func(offset time.Duration) *time.Time { ts := staleNow.Add(offset); return &ts }
	markedStale := func(since time.Duration) func(*gardencorev1beta1.ProjectStatus) {
		return func(s *gardencorev1beta1.ProjectStatus) { s.StaleSinceTimestamp = &metav1.Time{Time: *at(since)} }
	}
	expiring := func(s *gardencorev1beta1.ProjectStatus) {
		s.StaleSinceTimestamp = &metav1.Time{Time: *at(-100 * day)}
		s.StaleAutoDeleteTimestamp = &metav1.Time{Time: *at(-10 * day)}
	}
	other := otherNamespace(t)
	ctx := context.Background()

	unused := newProject(t, nil)

	skipped := newProject(t, map[string]string{v1beta1constants.ProjectSkipStaleCheck: "true"})
	setStatus(t, skipped, expiring)

	active := newProject(t, nil)
	setStatus(t, active, func(s *gardencorev1beta1.ProjectStatus) { s.LastActivityTimestamp = &metav1.Time{Time: *at(-29 * day)} })

	withShoot := newProject(t, nil)
	setStatus(t, withShoot, expiring)
	require.NoError(t, testenv.LocalProvider(ctx, env.Client))
	create(t, testenv.WorkerlessShoot(*withShoot.Spec.Namespace, "shoot"))

	withBackupEntry := newProject(t, nil)
	entry, err := testenv.BackupEntry(ctx, env.Client, *withBackupEntry.Spec.Namespace, "entry")
	require.NoError(t, err)
	create(t, entry)

	// Secrets and Quotas of a project namespace, referenced by bindings in another namespace that
	// a Shoot there uses.
	local := gardencorev1beta1.SecretBindingProvider{Type: "local"}
	credentials(t, other)
	withSecretBinding := newProject(t, nil)
	credentials(t, *withSecretBinding.Spec.Namespace)
	create(t, &gardencorev1beta1.SecretBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sb-secret", Namespace: other},
		SecretRef:  corev1.SecretReference{Name: "credentials", Namespace: *withSecretBinding.Spec.Namespace},
		Provider:   &local,
	})
	usedBy(t, other, "sb-secret", func(s *gardencorev1beta1.ShootSpec) { s.SecretBindingName = ptr.To("sb-secret") })

	withCredentialsBinding := newProject(t, nil)
	credentials(t, *withCredentialsBinding.Spec.Namespace)
	create(t, &securityv1alpha1.CredentialsBinding{
		ObjectMeta:     metav1.ObjectMeta{Name: "cb-secret", Namespace: other},
		CredentialsRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "credentials", Namespace: *withCredentialsBinding.Spec.Namespace},
		Provider:       securityv1alpha1.CredentialsBindingProvider{Type: "local"},
	})
	usedBy(t, other, "cb-secret", func(s *gardencorev1beta1.ShootSpec) { s.CredentialsBindingName = ptr.To("cb-secret") })

	withQuota := newProject(t, nil)
	create(t, &gardencorev1beta1.Quota{
		ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: *withQuota.Spec.Namespace},
		Spec:       gardencorev1beta1.QuotaSpec{Scope: corev1.ObjectReference{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Project"}},
	})
	create(t, &gardencorev1beta1.SecretBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sb-quota", Namespace: other},
		SecretRef:  corev1.SecretReference{Name: "credentials", Namespace: other},
		Quotas:     []corev1.ObjectReference{{Name: "quota", Namespace: *withQuota.Spec.Namespace}},
		Provider:   &local,
	})
	usedBy(t, other, "sb-quota", func(s *gardencorev1beta1.ShootSpec) { s.SecretBindingName = ptr.To("sb-quota") })

	withUnusedBinding := newProject(t, nil)
	credentials(t, *withUnusedBinding.Spec.Namespace)
	create(t, &gardencorev1beta1.SecretBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sb-unused", Namespace: other},
		SecretRef:  corev1.SecretReference{Name: "credentials", Namespace: *withUnusedBinding.Spec.Namespace},
		Provider:   &local,
	})

	withinGrace := newProject(t, nil)
	setStatus(t, withinGrace, markedStale(-13*day))

	pastGrace := newProject(t, nil)
	setStatus(t, pastGrace, markedStale(-20*day))

	expired := newProject(t, nil)
	setStatus(t, expired, expiring)
	// A finalizer keeps the deleted Project readable, to see the confirmation.
	expired.Finalizers = []string{"test.gardener.cloud/keep"}
	require.NoError(t, env.Client.Update(ctx, expired))
	t.Cleanup(func() {
		if p := current(t, expired); p != nil {
			p.Finalizers = nil
			_ = env.Client.Update(ctx, p)
		}
	})

	h.Sweep(project.StaleSweep)

	t.Run("unused Project becomes stale, no auto-delete timestamp yet", func(t *testing.T) {
		assertStale(t, unused, at(0), nil)
	})
	t.Run("skip annotation on the namespace: not stale", func(t *testing.T) { assertStale(t, skipped, nil, nil) })
	t.Run("recently active: not stale", func(t *testing.T) { assertStale(t, active, nil, nil) })
	t.Run("in use by a Shoot: stops being stale, both timestamps cleared", func(t *testing.T) { assertStale(t, withShoot, nil, nil) })
	t.Run("in use by a BackupEntry", func(t *testing.T) { assertStale(t, withBackupEntry, nil, nil) })
	t.Run("in use by a Secret through a SecretBinding", func(t *testing.T) { assertStale(t, withSecretBinding, nil, nil) })
	t.Run("in use by a Secret through a CredentialsBinding", func(t *testing.T) { assertStale(t, withCredentialsBinding, nil, nil) })
	t.Run("in use by a Quota", func(t *testing.T) { assertStale(t, withQuota, nil, nil) })
	t.Run("a binding no Shoot uses keeps nothing in use", func(t *testing.T) { assertStale(t, withUnusedBinding, at(0), nil) })
	t.Run("stale within the grace period: no auto-delete timestamp", func(t *testing.T) {
		assertStale(t, withinGrace, at(-13*day), nil)
	})
	t.Run("grace period passed: auto-delete timestamp set", func(t *testing.T) {
		assertStale(t, pastGrace, at(-20*day), at(-20*day+90*day))
	})
	t.Run("expired: deleted, with the deletion confirmed", func(t *testing.T) {
		p := current(t, expired)
		require.NotNil(t, p)
		assert.NotNil(t, p.DeletionTimestamp)
		assert.Equal(t, "true", p.Annotations[v1beta1constants.ConfirmationDeletion])
	})

	t.Run("a second sweep writes nothing", func(t *testing.T) {
		h.ResetRequests()
		h.Sweep(project.StaleSweep)
		assert.Zero(t, h.Requests("patch")+h.Requests("delete")+h.Requests("create"), "writes")
		assert.Zero(t, h.Requests("get"), "the sweep reads everything from its lists")
	})
}

func TestStaleSweepTooYoung(t *testing.T) {
	// At the shared clock every Project is old; a minimum lifetime beyond it makes them young.
	h := newStaleHarness(t, stale.Settings{MinimumLifetimeDays: 2000, StaleGracePeriodDays: 14, StaleExpirationTimeDays: 90})
	young := newProject(t, nil)
	setStatus(t, young, func(s *gardencorev1beta1.ProjectStatus) {
		s.StaleSinceTimestamp = &metav1.Time{Time: staleNow.Add(-100 * day)}
		s.StaleAutoDeleteTimestamp = &metav1.Time{Time: staleNow.Add(-10 * day)}
	})
	h.Sweep(project.StaleSweep)
	assertStale(t, young, nil, nil)
}

// TestStaleSweepCost shows that a sweep costs the same LISTs whatever the number of Projects:
// one per listed kind (a page each here, ⌈objects/page size⌉ in general).
func TestStaleSweepCost(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 500 Projects")
	}
	options := functiontest.DefaultOptions
	options.ListPageSize = 100000 // one page per kind, so that only the number of LISTs is compared
	h := newStaleHarness(t, gardenerDefaults, functiontest.WithOptions(options))
	createProjects(t, 50)
	lists := func() (int, int) {
		h.Sweep(project.StaleSweep)
		h.ResetRequests()
		h.Sweep(project.StaleSweep)
		return h.Requests("list"), h.Requests("")
	}
	lists50, all50 := lists()
	createProjects(t, 450)
	lists500, all500 := lists()
	assert.Equal(t, 1+len(stale.Related), lists50, "one LIST per kind")
	assert.Equal(t, lists50, lists500, "LISTs with 50 and with 500 Projects")
	assert.Equal(t, lists50, all50, "a sweep that changes nothing sends nothing but its LISTs")
	assert.Equal(t, lists500, all500, "a sweep that changes nothing sends nothing but its LISTs")
}

// createProjects creates n unused Projects with their namespaces, in parallel.
func createProjects(t testing.TB, n int) {
	t.Helper()
	require.NoError(t, testenv.Parallel(n, func(int) error { return createUnusedProject(t) }))
}

func createUnusedProject(t testing.TB) error {
	ctx := context.Background()
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{GenerateName: "cost-"}}
	if err := env.Client.Create(ctx, p); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-" + p.Name}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return err
	}
	p.Spec.Namespace = ptr.To(ns.Name)
	if err := env.Client.Update(ctx, p); err != nil {
		return fmt.Errorf("project %s: %w", p.Name, err)
	}
	p.Status.Phase = gardencorev1beta1.ProjectReady
	if err := env.Client.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("project %s: %w", p.Name, err)
	}
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(testenv.DeleteConfirmed(ctx, env.Client, p))
		_ = client.IgnoreNotFound(env.Client.Delete(ctx, ns))
	})
	return nil
}
