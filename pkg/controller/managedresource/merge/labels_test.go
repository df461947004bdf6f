package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInjectLabels(t *testing.T) {
	inject := map[string]string{"inject": "me", "shared": "injected"}
	tests := []struct {
		name     string
		labels   map[string]string
		manifest string
		want     string
		wantErr  string
	}{
		{
			name:     "no labels change nothing",
			manifest: `{kind: Pod, spec: {template: {}}}`,
			want:     `{kind: Pod, spec: {template: {}}}`,
		},
		{
			name:     "object metadata, injected labels win",
			labels:   inject,
			manifest: `{kind: ConfigMap, metadata: {labels: {own: x, shared: own}}}`,
			want:     `{kind: ConfigMap, metadata: {labels: {own: x, inject: me, shared: injected}}}`,
		},
		{
			name:     "pod template, even without metadata",
			labels:   inject,
			manifest: `{kind: Deployment, spec: {template: {spec: {}}}}`,
			want:     `{kind: Deployment, metadata: {labels: {inject: me, shared: injected}}, spec: {template: {metadata: {labels: {inject: me, shared: injected}}, spec: {}}}}`,
		},
		{
			name:     "pod template labels are merged",
			labels:   inject,
			manifest: `{kind: Deployment, spec: {template: {metadata: {labels: {app: a}}}}}`,
			want:     `{kind: Deployment, metadata: {labels: {inject: me, shared: injected}}, spec: {template: {metadata: {labels: {app: a, inject: me, shared: injected}}}}}`,
		},
		{
			name:     "volume claim templates",
			labels:   inject,
			manifest: `{kind: StatefulSet, spec: {volumeClaimTemplates: [{metadata: {name: data}}, {metadata: {name: logs, labels: {tier: x}}}]}}`,
			want: `{kind: StatefulSet, metadata: {labels: {inject: me, shared: injected}}, spec: {volumeClaimTemplates: [
				{metadata: {name: data, labels: {inject: me, shared: injected}}},
				{metadata: {name: logs, labels: {tier: x, inject: me, shared: injected}}}]}}`,
		},
		{
			name:     "a volume claim template that is not an object",
			labels:   inject,
			manifest: `{kind: StatefulSet, spec: {volumeClaimTemplates: [data]}}`,
			wantErr:  "failed to inject labels into .spec.volumeClaimTemplates[0], is not a map[string]any",
		},
		{
			name:     "a pod template that is not an object",
			labels:   inject,
			manifest: `{kind: Deployment, spec: {template: oops}}`,
			wantErr:  ".spec.template accessor error: oops is of the type string, expected map[string]interface{}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.manifest)
			err := InjectLabels(obj, tt.labels)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, object(t, tt.want).Object, obj.Object)
		})
	}
}
