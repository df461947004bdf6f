package merge

import (
	"errors"
	"fmt"
	"testing"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestTruthy(t *testing.T) {
	for _, value := range []string{"true", "True", "TRUE", "t", "T", "1"} {
		assert.True(t, Truthy(map[string]string{"k": value}, "k"), value)
	}
	for _, value := range []string{"", "yes", "on", "false", "0", " true"} {
		assert.False(t, Truthy(map[string]string{"k": value}, "k"), value)
	}
	assert.False(t, Truthy(nil, "k"))
}

func TestAnnotationSwitches(t *testing.T) {
	obj := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {
		resources.gardener.cloud/ignore: "1", resources.gardener.cloud/keep-object: "T"}}}`)
	assert.True(t, Ignored(obj))
	assert.True(t, KeepObject(obj))

	none := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/keep-object: "no"}}}`)
	assert.False(t, Ignored(none))
	assert.False(t, KeepObject(none))
}

func TestGarbageCollectable(t *testing.T) {
	tests := []struct {
		manifest string
		want     bool
	}{
		{`{apiVersion: v1, kind: Secret, metadata: {labels: {resources.gardener.cloud/garbage-collectable-reference: "true"}}}`, true},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {labels: {resources.gardener.cloud/garbage-collectable-reference: "true"}}}`, true},
		{`{apiVersion: v1, kind: ConfigMap, metadata: {labels: {resources.gardener.cloud/garbage-collectable-reference: "false"}}}`, false},
		{`{apiVersion: v1, kind: ServiceAccount, metadata: {labels: {resources.gardener.cloud/garbage-collectable-reference: "true"}}}`, false},
		{`{apiVersion: v1, kind: Secret}`, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, GarbageCollectable(object(t, tt.manifest)), tt.manifest)
	}
}

func TestDeleteOnInvalidUpdate(t *testing.T) {
	immutable := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", field.ErrorList{
		field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"),
	})
	otherInvalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", field.ErrorList{
		field.Invalid(field.NewPath("data"), "x", "field is immutable when `immutable` is set"),
	})
	tests := []struct {
		name     string
		manifest string
		err      error
		want     bool
	}{
		{"asked for", `{apiVersion: apps/v1, kind: Deployment, metadata: {annotations: {resources.gardener.cloud/delete-on-invalid-update: "true"}}}`, errors.New("x"), true},
		{"immutable ConfigMap", `{apiVersion: v1, kind: ConfigMap}`, immutable, true},
		{"immutable Secret", `{apiVersion: v1, kind: Secret}`, immutable, true},
		{"other cause type", `{apiVersion: v1, kind: Secret}`, otherInvalid, false},
		{"other kind", `{apiVersion: apps/v1, kind: Deployment}`, immutable, false},
		{"not asked for", `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/delete-on-invalid-update: "false"}}}`, errors.New("x"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, DeleteOnInvalidUpdate(object(t, tt.manifest), tt.err))
		})
	}
}

func TestDeletionPropagation(t *testing.T) {
	with := func(value string) metav1.Object {
		return object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/deletion-propagation-on-invalid-update: "`+value+`"}}}`)
	}
	policy, err := DeletionPropagation(object(t, `{apiVersion: v1, kind: ConfigMap}`))
	require.NoError(t, err)
	assert.Empty(t, policy)

	policy, err = DeletionPropagation(with("Orphan"))
	require.NoError(t, err)
	assert.Equal(t, metav1.DeletePropagationOrphan, policy)

	_, err = DeletionPropagation(with("orphan"))
	assert.EqualError(t, err, `"orphan" is invalid, supported values: [Background Foreground Orphan]`)
}

func TestDeletesInForeground(t *testing.T) {
	for group, want := range map[string]bool{"apps": true, "extensions": true, "batch": true, "": false, "rbac.authorization.k8s.io": false} {
		assert.Equal(t, want, DeletesInForeground(group), group)
	}
}

func TestFinalizeDue(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		manifest string
		want     bool
		wantErr  string
	}{
		{
			name:     "not asked for",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {deletionTimestamp: "2024-06-01T00:00:00Z", finalizers: [f]}}`,
		},
		{
			name:     "not yet in deletion",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 1m}, finalizers: [f]}}`,
		},
		{
			name:     "grace period not over",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 1h}, deletionTimestamp: "2024-06-01T11:30:00Z", finalizers: [f]}}`,
		},
		{
			name:     "grace period over",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 1h}, deletionTimestamp: "2024-06-01T11:00:00Z", finalizers: [f]}}`,
			want:     true,
		},
		{
			name:     "no finalizers left",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 1h}, deletionTimestamp: "2024-06-01T11:00:00Z"}}`,
		},
		{
			name:     "a Namespace fails as in Gardener",
			manifest: `{apiVersion: v1, kind: Namespace, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 1s}, deletionTimestamp: "2024-06-01T11:00:00Z"}, spec: {finalizers: [kubernetes]}}`,
			wantErr:  "failed checking whether resource has finalizers: corev1.Namespace expected",
		},
		{
			name:     "not a duration",
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: soon}}}`,
			wantErr:  `failed parsing duration of resources.gardener.cloud/finalize-deletion-after annotation: time: invalid duration "soon"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, err := FinalizeDue(object(t, tt.manifest), now)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, due)
		})
	}

	after, err := ParseFinalizeDeletionAfter(object(t, `{metadata: {annotations: {resources.gardener.cloud/finalize-deletion-after: 90s}}}`))
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, after)
}

func TestPVCCleanup(t *testing.T) {
	const statefulSet = `
apiVersion: %s
kind: StatefulSet
metadata: {name: etcd, namespace: shoot}
spec:
  selector: {matchLabels: {app: etcd}}
  volumeClaimTemplates: %s
`
	tests := []struct {
		name         string
		manifest     string
		deletePVCs   bool
		wantSelector map[string]string
		wantCleanup  bool
		wantErr      string
	}{
		{name: "claims to delete", manifest: fmt.Sprintf(statefulSet, "apps/v1", "[{metadata: {name: data}}]"), deletePVCs: true, wantSelector: map[string]string{"app": "etcd"}, wantCleanup: true},
		{name: "not asked for", manifest: fmt.Sprintf(statefulSet, "apps/v1", "[{metadata: {name: data}}]")},
		{name: "no claim templates", manifest: fmt.Sprintf(statefulSet, "apps/v1", "[]"), deletePVCs: true},
		{name: "not a StatefulSet", manifest: `{apiVersion: apps/v1, kind: Deployment}`, deletePVCs: true},
		{
			name: "an extensions StatefulSet cannot be read", manifest: fmt.Sprintf(statefulSet, "extensions/v1beta1", "[]"), deletePVCs: true,
			wantErr: `failed cleaning up PersistentVolumeClaims of StatefulSet: could not convert object to StatefulSet: no kind "StatefulSet" is registered for version "extensions/v1beta1"`,
		},
		{
			name: "without a selector", manifest: `{apiVersion: apps/v1, kind: StatefulSet, spec: {volumeClaimTemplates: [{metadata: {name: data}}]}}`, deletePVCs: true,
			wantErr: "failed cleaning up PersistentVolumeClaims of StatefulSet: StatefulSet has no selector",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selector, cleanup, err := PVCCleanup(object(t, tt.manifest), tt.deletePVCs)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantCleanup, cleanup)
			assert.Equal(t, tt.wantSelector, selector)
		})
	}
}

func TestRelease(t *testing.T) {
	const manifest = `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {
		resources.gardener.cloud/origin: %s, resources.gardener.cloud/description: d, theirs: x}}}`

	obj := object(t, fmt.Sprintf(manifest, origin))
	assert.True(t, Release(obj, origin))
	assert.Equal(t, map[string]string{"theirs": "x"}, obj.GetAnnotations())

	taken := object(t, fmt.Sprintf(manifest, "other/mr"))
	assert.False(t, Release(taken, origin))
	assert.Equal(t, "other/mr", taken.GetAnnotations()[resourcesv1alpha1.OriginAnnotation])
}

func TestLeaveIgnored(t *testing.T) {
	current := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {
		resources.gardener.cloud/origin: o, resources.gardener.cloud/description: d}}}`)
	LeaveIgnored(current)
	assert.Equal(t, map[string]string{resourcesv1alpha1.OriginAnnotation: "o"}, current.GetAnnotations())
}
