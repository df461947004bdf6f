package merge

import (
	"fmt"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

const origin = "shoot--foo--bar/kube-system"

// object parses a YAML manifest.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &u.Object))
	return u
}

// typed converts an unstructured object into a typed one for assertions.
func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out))
	return out
}

func managed(annotations map[string]string) map[string]string {
	out := map[string]string{DescriptionAnnotation: Description, resourcesv1alpha1.OriginAnnotation: origin}
	for k, v := range annotations {
		out[k] = v
	}
	return out
}

func TestMergeMetadata(t *testing.T) {
	const live = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: default
  resourceVersion: "42"
  finalizers: [keep]
  uid: 0a0e
  labels: {theirs: x, dropped: old, changed: by-user}
  annotations:
    theirs: x
    dropped: old
    reference.resources.gardener.cloud/configmap-0123abcd: stale
  ownerReferences: [{apiVersion: v1, kind: Namespace, name: default, uid: 18590d53}]
data: {k: live}
`
	const desired = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  namespace: default
  labels: {ours: v}
  annotations:
    ours: v
    reference.resources.gardener.cloud/secret-89abcdef: fresh
data: {k: desired}
`
	old := map[string]string{"dropped": "old", "changed": "as-applied"}

	tests := []struct {
		name            string
		opts            Options
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name:       "labels and annotations of others stay, those no longer wanted go unless changed since",
			opts:       Options{OldLabels: old, OldAnnotations: old},
			wantLabels: map[string]string{"theirs": "x", "changed": "by-user", "ours": "v"},
			wantAnnotations: managed(map[string]string{
				"theirs": "x", "ours": "v", "reference.resources.gardener.cloud/secret-89abcdef": "fresh",
			}),
		},
		{
			name:       "without old information nothing is dropped but stale reference annotations",
			wantLabels: map[string]string{"theirs": "x", "dropped": "old", "changed": "by-user", "ours": "v"},
			wantAnnotations: managed(map[string]string{
				"theirs": "x", "dropped": "old", "ours": "v", "reference.resources.gardener.cloud/secret-89abcdef": "fresh",
			}),
		},
		{
			name:       "force overwrite replaces labels and annotations",
			opts:       Options{ForceOverwriteLabels: true, ForceOverwriteAnnotations: true, OldLabels: old},
			wantLabels: map[string]string{"ours": "v"},
			wantAnnotations: managed(map[string]string{
				"ours": "v", "reference.resources.gardener.cloud/secret-89abcdef": "fresh",
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := object(t, live)
			require.NoError(t, Merge(origin, object(t, desired), current, tt.opts))

			assert.Equal(t, tt.wantLabels, current.GetLabels())
			assert.Equal(t, tt.wantAnnotations, current.GetAnnotations())
			assert.Equal(t, "42", current.GetResourceVersion())
			assert.Equal(t, []string{"keep"}, current.GetFinalizers())
			assert.EqualValues(t, "0a0e", current.GetUID())
			assert.Nil(t, current.GetOwnerReferences(), "owner references are the desired ones")
			assert.Equal(t, map[string]any{"k": "desired"}, current.Object["data"])
		})
	}
}

func TestMergeOwnerReferencesAndStatus(t *testing.T) {
	live := object(t, `
apiVersion: v1
kind: Pod
metadata: {name: p, ownerReferences: [{apiVersion: v1, kind: Namespace, name: a, uid: "1"}]}
status: {podIP: 10.0.0.1}
`)
	desired := object(t, `
apiVersion: v1
kind: Pod
metadata: {name: p, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: b, uid: "2"}]}
status: {podIP: 10.0.0.2}
`)
	require.NoError(t, Merge(origin, desired, live, Options{}))
	assert.Equal(t, desired.GetOwnerReferences(), live.GetOwnerReferences())
	assert.Equal(t, map[string]any{"podIP": "10.0.0.1"}, live.Object["status"], "a non-empty live status stays")

	for _, status := range []string{"status: {}", ""} {
		current := object(t, "{apiVersion: v1, kind: Pod, metadata: {name: p}}\n")
		if status != "" {
			current.Object["status"] = map[string]any{}
		}
		require.NoError(t, Merge(origin, desired, current, Options{}))
		assert.NotContains(t, current.Object, "status", "the desired status is never applied")
	}
}

func TestMergeCreate(t *testing.T) {
	desired := object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, labels: {a: b}}
data: {k: v}
`)
	current := desired.DeepCopy()
	require.NoError(t, Merge(origin, desired, current, Options{}))
	assert.Equal(t, map[string]string{"a": "b"}, current.GetLabels())
	assert.Equal(t, managed(nil), current.GetAnnotations())

	empty := object(t, "{apiVersion: v1, kind: ConfigMap, metadata: {}}\n")
	require.NoError(t, Merge(origin, desired, empty, Options{}))
	assert.Equal(t, "cm", empty.GetName(), "empty live metadata gives way to the desired one")
}

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: ns
  annotations: {%s}
spec:
  replicas: %s
  selector: {matchLabels: {app: d}}
  template:
    metadata:
      labels: {app: d}
      annotations: {%s}
    spec:
      containers:
      - name: main
        image: %s
        resources:
          requests: {cpu: %s, memory: %s, ephemeral-storage: %s}
          limits: {memory: %s}
      - name: sidecar
        image: sidecar
        resources:
          requests: {cpu: %s}
`

func deployment(t *testing.T, annotations, replicas, templateAnnotations, image, cpu, memory, storage, limit, sidecarCPU string) *unstructured.Unstructured {
	return object(t, fmt.Sprintf(deploymentYAML, annotations, replicas, templateAnnotations, image, cpu, memory, storage, limit, sidecarCPU))
}

func TestMergeDeployment(t *testing.T) {
	live := func() *unstructured.Unstructured {
		return deployment(t, "", "5", `"kubectl.kubernetes.io/restartedAt": "2024-05-01T10:00:00Z"`, "old", "300m", "1Gi", "1Gi", "2Gi", "10m")
	}
	tests := []struct {
		name          string
		annotations   string
		replicas      string
		scaled        bool
		wantReplicas  int32
		wantResources corev1.ResourceRequirements
	}{
		{
			name:         "desired replicas win",
			replicas:     "2",
			wantReplicas: 2,
		},
		{
			name:         "no desired replicas keeps the live ones",
			replicas:     "null",
			wantReplicas: 5,
		},
		{
			name:         "HPA keeps the live replicas",
			replicas:     "2",
			scaled:       true,
			wantReplicas: 5,
		},
		{
			name:         "preserve-replicas keeps the live replicas",
			annotations:  `resources.gardener.cloud/preserve-replicas: "true"`,
			replicas:     "2",
			wantReplicas: 5,
		},
		{
			name:         "preserve-replicas takes only the exact string true",
			annotations:  `resources.gardener.cloud/preserve-replicas: "True"`,
			replicas:     "2",
			wantReplicas: 2,
		},
		{
			name:         "preserve-resources keeps live CPU and memory of same-named containers",
			annotations:  `resources.gardener.cloud/preserve-resources: "true"`,
			replicas:     "2",
			wantReplicas: 2,
			wantResources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:              resource.MustParse("300m"),
					corev1.ResourceMemory:           resource.MustParse("1Gi"),
					corev1.ResourceEphemeralStorage: resource.MustParse("5Gi"),
				},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := live()
			desired := deployment(t, tt.annotations, tt.replicas, "", "new", "100m", "256Mi", "5Gi", "512Mi", "20m")
			require.NoError(t, Merge(origin, desired, current, Options{HorizontallyScaled: tt.scaled}))

			got := typed[appsv1.Deployment](t, current)
			require.NotNil(t, got.Spec.Replicas)
			assert.Equal(t, tt.wantReplicas, *got.Spec.Replicas)
			assert.Equal(t, "new", got.Spec.Template.Spec.Containers[0].Image)
			assert.Equal(t, "2024-05-01T10:00:00Z", got.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"], "a rollout restart is not undone")

			want := tt.wantResources
			if want.Requests == nil {
				want = typed[appsv1.Deployment](t, desired).Spec.Template.Spec.Containers[0].Resources
			}
			assertResources(t, want, got.Spec.Template.Spec.Containers[0].Resources)
			wantSidecar := "20m"
			if tt.wantResources.Requests != nil {
				wantSidecar = "10m"
			}
			assert.Equal(t, wantSidecar, got.Spec.Template.Spec.Containers[1].Resources.Requests.Cpu().String())
		})
	}
}

func assertResources(t *testing.T, want, got corev1.ResourceRequirements) {
	t.Helper()
	for _, pair := range [][2]corev1.ResourceList{{want.Requests, got.Requests}, {want.Limits, got.Limits}} {
		require.Len(t, pair[1], len(pair[0]))
		for name, quantity := range pair[0] {
			gotQuantity := pair[1][name]
			assert.Zero(t, quantity.Cmp(gotQuantity), "%s: want %s, got %s", name, quantity.String(), gotQuantity.String())
		}
	}
}

func TestMergeRoundTripsThroughTheTypedObject(t *testing.T) {
	desired := object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  unknownField: dropped
  template: {spec: {containers: [{name: c}]}}
`)
	current := desired.DeepCopy()
	require.NoError(t, Merge(origin, desired, current, Options{}))
	assert.NotContains(t, current.Object["spec"], "unknownField")
	assert.Equal(t, map[string]any{}, current.Object["status"], "the typed Deployment writes an empty status")

	extensions := object(t, "{apiVersion: extensions/v1beta1, kind: Deployment, metadata: {name: d}}\n")
	assert.EqualError(t, Merge(origin, extensions, extensions.DeepCopy(), Options{}),
		"converting (v1beta1.Deployment) to (v1.Deployment): unknown conversion")
}

func TestMergeStatefulSet(t *testing.T) {
	const manifest = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, namespace: ns%s}
spec:
  replicas: %s
  template: {spec: {containers: [{name: c}]}}
  volumeClaimTemplates: [{metadata: {name: %s}}]
`
	tests := []struct {
		name, created, replicas, wantClaim string
		wantReplicas                       int32
	}{
		{name: "not yet created: desired volumeClaimTemplates", replicas: "3", wantClaim: "desired", wantReplicas: 3},
		{name: "created: live volumeClaimTemplates, they are immutable", created: ", creationTimestamp: '2024-01-01T00:00:00Z'", replicas: "3", wantClaim: "live", wantReplicas: 3},
		{name: "no desired replicas keeps the live ones", replicas: "null", wantClaim: "desired", wantReplicas: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := object(t, fmt.Sprintf(manifest, tt.created, "1", "live"))
			require.NoError(t, Merge(origin, object(t, fmt.Sprintf(manifest, "", tt.replicas, "desired")), current, Options{}))
			got := typed[appsv1.StatefulSet](t, current)
			assert.Equal(t, tt.wantClaim, got.Spec.VolumeClaimTemplates[0].Name)
			assert.Equal(t, tt.wantReplicas, *got.Spec.Replicas)
		})
	}
}

func TestMergeDaemonSetKeepsRolloutRestart(t *testing.T) {
	const manifest = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec: {template: {metadata: {annotations: {%s}}, spec: {containers: [{name: c}]}}}
`
	current := object(t, fmt.Sprintf(manifest, `"kubectl.kubernetes.io/restartedAt": "now"`))
	require.NoError(t, Merge(origin, object(t, fmt.Sprintf(manifest, "a: b")), current, Options{}))
	assert.Equal(t, map[string]string{"a": "b", "kubectl.kubernetes.io/restartedAt": "now"},
		typed[appsv1.DaemonSet](t, current).Spec.Template.Annotations)
}

func TestMergeJob(t *testing.T) {
	current := object(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  selector: {matchLabels: {controller-uid: abc}}
  template: {metadata: {labels: {controller-uid: abc, job-name: j, app: old}}, spec: {containers: [{name: c}]}}
`)
	desired := object(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  selector: {matchLabels: {app: new}}
  template: {metadata: {labels: {app: new}}, spec: {containers: [{name: c}]}}
`)
	require.NoError(t, Merge(origin, desired, current, Options{}))
	got := typed[batchv1.Job](t, current)
	assert.Equal(t, map[string]string{"controller-uid": "abc"}, got.Spec.Selector.MatchLabels)
	assert.Equal(t, map[string]string{"controller-uid": "abc", "job-name": "j", "app": "new"}, got.Spec.Template.Labels)
}

func TestMergeCronJob(t *testing.T) {
	const manifest = `
apiVersion: batch/%s
kind: CronJob
metadata:
  name: cj
  annotations: {resources.gardener.cloud/preserve-resources: "true"}
spec:
  schedule: "* * * * *"
  jobTemplate: {spec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: %s}}}]}}}}
`
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			current := object(t, fmt.Sprintf(manifest, version, "700m"))
			require.NoError(t, Merge(origin, object(t, fmt.Sprintf(manifest, version, "100m")), current, Options{}))
			var containers []corev1.Container
			if version == "v1" {
				containers = typed[batchv1.CronJob](t, current).Spec.JobTemplate.Spec.Template.Spec.Containers
			} else {
				containers = typed[batchv1beta1.CronJob](t, current).Spec.JobTemplate.Spec.Template.Spec.Containers
			}
			assert.Equal(t, "700m", containers[0].Resources.Requests.Cpu().String())
		})
	}

	v2 := object(t, fmt.Sprintf(manifest, "v2", "1"))
	assert.EqualError(t, Merge(origin, v2, v2.DeepCopy(), Options{}), "cannot merge objects with gvk: batch/v2, Kind=CronJob")
}

func TestMergeService(t *testing.T) {
	const live = `
apiVersion: v1
kind: Service
metadata: {name: s}
spec:
  type: %s
  clusterIP: 10.0.0.10
  loadBalancerIP: 1.2.3.4
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports:
  - {name: http, port: 80, nodePort: 30080}
  - {name: https, port: 443, nodePort: 30443}
`
	tests := []struct {
		name     string
		liveType string
		desired  string
		want     corev1.ServiceSpec
	}{
		{
			name:     "cluster IP is kept and the type defaulted",
			liveType: "ClusterIP",
			desired:  `{clusterIP: 10.0.0.99, ports: [{name: http, port: 80}]}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.10", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		},
		{
			name:     "a Service can become headless",
			liveType: "ClusterIP",
			desired:  `{type: ClusterIP, clusterIP: None}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone},
		},
		{
			name:     "node ports are kept by port or name, an explicit one wins",
			liveType: "NodePort",
			desired:  `{type: NodePort, ports: [{name: web, port: 80}, {name: https, port: 8443}, {name: metrics, port: 9090, nodePort: 31000}]}`,
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.10", LoadBalancerIP: "1.2.3.4", Ports: []corev1.ServicePort{
				{Name: "web", Port: 80, NodePort: 30080},
				{Name: "https", Port: 8443, NodePort: 30443},
				{Name: "metrics", Port: 9090, NodePort: 31000},
			}},
		},
		{
			name:     "load balancer keeps its IP and health check node port",
			liveType: "LoadBalancer",
			desired:  `{type: LoadBalancer, externalTrafficPolicy: Local}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.10", LoadBalancerIP: "1.2.3.4", ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 32000},
		},
		{
			name:     "health check node port only stays while the policy stays Local",
			liveType: "LoadBalancer",
			desired:  `{type: LoadBalancer, externalTrafficPolicy: Cluster, loadBalancerIP: 5.6.7.8}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.10", LoadBalancerIP: "5.6.7.8", ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster},
		},
		{
			name:     "ExternalName has no cluster IP to keep",
			liveType: "ClusterIP",
			desired:  `{type: ExternalName, externalName: example.com}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"},
		},
		{
			name:     "from ExternalName the desired cluster IP is taken",
			liveType: "ExternalName",
			desired:  `{type: ClusterIP, clusterIP: 10.0.0.99}`,
			want:     corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.99"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := object(t, fmt.Sprintf(live, tt.liveType))
			desired := object(t, "{apiVersion: v1, kind: Service, metadata: {name: s}, spec: "+tt.desired+"}\n")
			require.NoError(t, Merge(origin, desired, current, Options{}))
			assert.Equal(t, tt.want, typed[corev1.Service](t, current).Spec)
		})
	}
}

func TestMergeServiceOpenStackAnnotations(t *testing.T) {
	live := `
apiVersion: v1
kind: Service
metadata: {name: s, annotations: {loadbalancer.openstack.org/load-balancer-id: lb-1}}
spec: {type: LoadBalancer}
`
	desired := object(t, "{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}}\n")

	current := object(t, live)
	require.NoError(t, Merge(origin, desired, current, Options{}))
	assert.Equal(t, "lb-1", current.GetAnnotations()["loadbalancer.openstack.org/load-balancer-id"], "kept by the annotation merge")

	current = object(t, live)
	require.NoError(t, Merge(origin, desired, current, Options{ForceOverwriteAnnotations: true}))
	assert.Equal(t, managed(nil), current.GetAnnotations(), "as in Gardener, force overwrite drops them too")
}

func TestMergeServiceAccount(t *testing.T) {
	current := object(t, `
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa}
secrets: [{name: token-abc}]
imagePullSecrets: [{name: pull}]
`)
	desired := object(t, "{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}, automountServiceAccountToken: false}\n")
	require.NoError(t, Merge(origin, desired, current, Options{}))
	got := typed[corev1.ServiceAccount](t, current)
	assert.Equal(t, []corev1.ObjectReference{{Name: "token-abc"}}, got.Secrets)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "pull"}}, got.ImagePullSecrets)
	assert.Equal(t, new(false), got.AutomountServiceAccountToken)
}

func TestMergeOwned(t *testing.T) {
	tests := []struct {
		name               string
		desired, live, old map[string]string
		want               map[string]string
	}{
		{name: "all empty is nil"},
		{name: "desired wins", desired: map[string]string{"a": "new"}, live: map[string]string{"a": "old", "b": "x"}, want: map[string]string{"a": "new", "b": "x"}},
		{name: "no longer wanted and unchanged goes", live: map[string]string{"a": "1"}, old: map[string]string{"a": "1"}},
		{name: "no longer wanted but changed stays", live: map[string]string{"a": "2"}, old: map[string]string{"a": "1"}, want: map[string]string{"a": "2"}},
		{name: "still wanted stays", desired: map[string]string{"a": "1"}, live: map[string]string{"a": "1"}, old: map[string]string{"a": "1"}, want: map[string]string{"a": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mergeOwned(tt.desired, tt.live, tt.old))
		})
	}
}
