package activity

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

func event(t *testing.T, obj client.Object, deleted bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	gvk, err := apiutil.GVKForObject(obj, scheme.Gardener)
	require.NoError(t, err)
	u.SetGroupVersionKind(gvk)
	// What an event carries went through JSON: integers are int64.
	data, err := u.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, u.UnmarshalJSON(data))
	return function.Event{Cluster: function.Source, Key: client.ObjectKeyFromObject(obj), Deleted: deleted, Object: u}
}

func TestCreatedDeletedOrSpecChanged(t *testing.T) {
	shoot := func(generation, observed int64) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-dev", Generation: generation}}
		s.Status.ObservedGeneration = observed
		return s
	}
	entry := &gardencorev1beta1.BackupEntry{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "garden-dev", Generation: 3}}
	entry.Status.ObservedGeneration = 3

	assert.True(t, CreatedDeletedOrSpecChanged(event(t, shoot(1, 0), false)), "created: nothing observed yet")
	assert.True(t, CreatedDeletedOrSpecChanged(event(t, shoot(5, 4), false)), "specification changed, not yet observed")
	assert.False(t, CreatedDeletedOrSpecChanged(event(t, shoot(5, 5), false)), "status update of an observed specification")
	assert.True(t, CreatedDeletedOrSpecChanged(event(t, shoot(5, 5), true)), "deleted")
	assert.False(t, CreatedDeletedOrSpecChanged(event(t, entry, false)), "BackupEntry status update")
	assert.True(t, CreatedDeletedOrSpecChanged(function.Event{Key: client.ObjectKey{Namespace: "garden-dev", Name: "s"}}), "reference-mode event: cannot tell")
}

func TestReferencedByBinding(t *testing.T) {
	secret := func(labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-dev", Labels: labels}}
	}
	quota := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "garden-dev", Labels: map[string]string{v1beta1constants.LabelCredentialsBindingReference: "true"}}}

	assert.True(t, ReferencedByBinding(event(t, secret(map[string]string{v1beta1constants.LabelSecretBindingReference: "true"}), false)))
	assert.True(t, ReferencedByBinding(event(t, secret(map[string]string{v1beta1constants.LabelCredentialsBindingReference: "true"}), true)))
	assert.True(t, ReferencedByBinding(event(t, secret(map[string]string{v1beta1constants.LabelSecretBindingReference: "false"}), false)), "Gardener looks at the label's presence")
	assert.True(t, ReferencedByBinding(event(t, quota, false)))
	assert.False(t, ReferencedByBinding(event(t, secret(nil), false)), "no binding references it")
	assert.False(t, ReferencedByBinding(event(t, secret(map[string]string{"gardener.cloud/role": "kubeconfig"}), true)))
}

func TestMapToProject(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-dev", Labels: map[string]string{v1beta1constants.ProjectName: "dev"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
	).Build()
	for _, tc := range []struct {
		namespace string
		want      []function.Key
	}{
		{"garden-dev", []function.Key{{Name: "dev"}}},
		{"kube-system", nil},
		{"no-such-namespace", nil},
		{"", nil},
	} {
		keys, err := MapToProject(context.Background(), c, function.Event{Key: client.ObjectKey{Namespace: tc.namespace, Name: "s"}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, keys, "namespace %q", tc.namespace)
	}
}

func TestReconcile(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-48 * time.Hour))
	project := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}
	project.Status.LastActivityTimestamp = &earlier
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(project).WithStatusSubresource(project).Build()
	clk := testclock.NewFakeClock(now.Add(300 * time.Millisecond))
	r, err := New(function.Deps{Source: function.ClusterClient{Reader: c, Writer: function.NewWriter(c)}, Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	reconcile := func(name string) error {
		return r.Reconcile(context.Background(), function.Request{Key: client.ObjectKey{Name: name}, Reader: c, Trigger: function.ByEvent})
	}

	require.NoError(t, reconcile("dev"))
	got := &gardencorev1beta1.Project{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "dev"}, got))
	require.NotNil(t, got.Status.LastActivityTimestamp)
	assert.True(t, now.Equal(got.Status.LastActivityTimestamp.Time), "now, to the second: %v", got.Status.LastActivityTimestamp)

	rv := got.ResourceVersion
	clk.Step(200 * time.Millisecond)
	require.NoError(t, reconcile("dev"))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "dev"}, got))
	assert.Equal(t, rv, got.ResourceVersion, "within the same second nothing is written")

	assert.NoError(t, reconcile("gone"), "a Project that is gone has no activity to record")
}

func TestEvidence(t *testing.T) {
	at := func(minute int) metav1.Time { return metav1.NewTime(time.Date(2026, 3, 1, 12, minute, 0, 0, time.UTC)) }
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(1), ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Time: ptr.To(at(5))}, {Manager: "gardenlet", Time: ptr.To(at(3)), Subresource: "status"}, {Manager: "no-time"},
	}}}
	assert.Equal(t, at(1).Time, Evidence(shoot, false), "only the creation, when not every change counts")
	assert.Equal(t, at(5).Time, Evidence(shoot, true), "the latest change, when every change counts")

	deleting := shoot.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(at(9))
	assert.Equal(t, at(9).Time, Evidence(deleting, false), "the start of its deletion")

	assert.True(t, Evidence(&gardencorev1beta1.Quota{}, true).IsZero(), "an object without times shows nothing")
}

func TestUnrecorded(t *testing.T) {
	at := func(minute int) time.Time { return time.Date(2026, 3, 1, 12, minute, 0, 0, time.UTC) }
	project := func(created int, last *int) *gardencorev1beta1.Project {
		p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(created))}}
		if last != nil {
			p.Status.LastActivityTimestamp = ptr.To(metav1.NewTime(at(*last)))
		}
		return p
	}
	now := at(30)
	for _, tc := range []struct {
		name     string
		project  *gardencorev1beta1.Project
		evidence time.Time
		want     time.Time
		ok       bool
	}{
		{"no activity recorded: the evidence", project(0, nil), at(10), at(10), true},
		{"later than the recorded activity: the evidence", project(0, ptr.To(5)), at(10), at(10), true},
		{"as late as the recorded activity: nothing", project(0, ptr.To(10)), at(10), time.Time{}, false},
		{"an event recorded it later: nothing", project(0, ptr.To(20)), at(10), time.Time{}, false},
		{"before the Project existed: nothing", project(15, nil), at(10), time.Time{}, false},
		{"in the second the Project was created: the order is unknown, it counts", project(10, nil), at(10), at(10), true},
		{"no evidence: nothing", project(0, nil), time.Time{}, time.Time{}, false},
		{"after now (the API server's clock runs ahead): now", project(0, nil), at(40), now, true},
		{"to the second, as the API stores it", project(0, nil), at(10).Add(700 * time.Millisecond), at(10), true},
	} {
		got, ok := Unrecorded(tc.project, tc.evidence, now)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.True(t, tc.want.Equal(got), "%s: got %v, want %v", tc.name, got, tc.want)
	}
}

func TestReconcileSweep(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-48 * time.Hour))
	project := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "dev", CreationTimestamp: created}, Spec: gardencorev1beta1.ProjectSpec{Namespace: ptr.To("garden-dev")}}
	shootCreated := metav1.NewTime(now.Add(-time.Hour))
	observed := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-dev", Generation: 2, CreationTimestamp: shootCreated}}
	observed.Status.ObservedGeneration = 2
	elsewhere := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "garden-other", CreationTimestamp: metav1.NewTime(now.Add(-time.Second)),
		Labels: map[string]string{v1beta1constants.LabelSecretBindingReference: "true"}}}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(project, observed, elsewhere).WithStatusSubresource(project).Build()
	r, err := New(function.Deps{Source: function.ClusterClient{Reader: c, Writer: function.NewWriter(c)}, Clock: testclock.NewFakeClock(now), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	require.NoError(t, r.Reconcile(context.Background(), function.Request{Key: client.ObjectKey{Name: "dev"}, Reader: c, Trigger: function.BySweep, Sweep: "activity"}))
	got := &gardencorev1beta1.Project{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "dev"}, got))
	require.NotNil(t, got.Status.LastActivityTimestamp, "the Shoot's creation, which no event recorded")
	assert.True(t, shootCreated.Equal(got.Status.LastActivityTimestamp),
		"its creation, not the later Quota of another namespace: %v", got.Status.LastActivityTimestamp)
}
