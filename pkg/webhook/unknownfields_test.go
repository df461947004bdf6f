package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/endpointslicehints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podschedulername"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podtopologyspreadconstraints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/seccompprofile"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/systemcomponentsconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

// patched applies resp's patch to raw and returns the result as a JSON tree.
func patched(t *testing.T, raw []byte, patches any) map[string]any {
	t.Helper()
	ops, err := json.Marshal(patches)
	require.NoError(t, err)
	out := raw
	if string(ops) != "null" && string(ops) != "[]" {
		patch, err := jsonpatch.DecodePatch(ops)
		require.NoError(t, err)
		out, err = patch.Apply(raw)
		require.NoError(t, err, "the patch applies to the object as the API server sent it")
	}
	return decode(t, out)
}

// decode keeps numbers as literals, so that a rounded integer shows.
func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&tree))
	return tree
}

// at resolves a JSON pointer ("/spec/containers/0/x") in tree.
func at(t *testing.T, tree any, pointer string) any {
	t.Helper()
	v := tree
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[part]; !ok {
				t.Fatalf("%s: no %q", pointer, part)
			}
		case []any:
			var i int
			require.NoError(t, json.Unmarshal([]byte(part), &i), pointer)
			require.Less(t, i, len(node), pointer)
			v = node[i]
		default:
			t.Fatalf("%s: %q in a scalar", pointer, part)
		}
	}
	return v
}

func tree(t *testing.T, raw string) map[string]any {
	t.Helper()
	return decode(t, []byte(raw))
}

// mutate decodes raw into a Pod, applies change and answers with webhook.Patch, as a handler
// does.
func mutate(t *testing.T, raw string, change func(*corev1.Pod)) admission.Response {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
	pod := &corev1.Pod{}
	decoded, err := webhook.Decode(req, pod)
	require.NoError(t, err)
	change(pod)
	resp := webhook.Patch(req, decoded, pod)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	return resp
}

const podWithFutureFields = `{
  "apiVersion": "v1", "kind": "Pod", "futureTop": {"a": [1, 2]},
  "metadata": {"name": "p", "namespace": "ns", "futureMeta": "m", "labels": {"app": "x"}},
  "spec": {
    "futureSpec": 9007199254740993,
    "containers": [{"name": "main", "image": "busybox", "futureContainer": true, "env": [{"name": "A", "value": "1", "futureEnv": "e"}]}],
    "nodeSelector": {"pool": "a"},
    "topologySpreadConstraints": [
      {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway", "futureOfReplaced": "r"},
      {"maxSkew": 2, "topologyKey": "custom", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}, "futureOfKept": "k"}
    ],
    "affinity": {"nodeAffinity": {"futureAffinity": 1}}
  },
  "status": {"futureStatus": {"phase": "later"}}
}`

func TestPatchKeepsFieldsTheTypesDoNotKnow(t *testing.T) {
	resp := mutate(t, podWithFutureFields, func(pod *corev1.Pod) {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "B", Value: "2"})
	})
	out := patched(t, []byte(podWithFutureFields), resp.Patches)
	in := tree(t, podWithFutureFields)
	for _, path := range []string{
		"/futureTop", "/metadata/futureMeta", "/spec/futureSpec", "/spec/containers/0/futureContainer",
		"/spec/containers/0/env/0/futureEnv", "/spec/topologySpreadConstraints/0/futureOfReplaced",
		"/spec/topologySpreadConstraints/1/futureOfKept", "/spec/affinity/nodeAffinity/futureAffinity", "/status/futureStatus",
	} {
		assert.Equal(t, at(t, in, path), at(t, out, path), path)
	}
	assert.Equal(t, map[string]any{"name": "B", "value": "2"}, at(t, out, "/spec/containers/0/env/1"))
	for _, op := range resp.Patches {
		assert.NotEqual(t, "remove", op.Operation, "nothing was removed: %v", op)
	}
	assert.Equal(t, json.Number("9007199254740993"), at(t, out, "/spec/futureSpec"), "an integer beyond float64's precision is not rounded")
}

// An element's unknown fields follow the element when the mutation deletes others and
// appends new ones (high-availability-config replaces constraints on the hostname key), and
// never land on the element that now sits at its index.
func TestPatchKeepsUnknownFieldsWithTheirListElements(t *testing.T) {
	resp := mutate(t, podWithFutureFields, func(pod *corev1.Pod) {
		kept := pod.Spec.TopologySpreadConstraints[1]
		kept.MatchLabelKeys = []string{"pod-template-hash"}
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{kept, {
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, MinDomains: new(int32(3)),
		}}
	})
	out := patched(t, []byte(podWithFutureFields), resp.Patches)
	assert.Equal(t, "custom", at(t, out, "/spec/topologySpreadConstraints/0/topologyKey"))
	assert.Equal(t, "k", at(t, out, "/spec/topologySpreadConstraints/0/futureOfKept"), "moved with its constraint")
	assert.Equal(t, []any{"pod-template-hash"}, at(t, out, "/spec/topologySpreadConstraints/0/matchLabelKeys"))
	replacement := at(t, out, "/spec/topologySpreadConstraints/1").(map[string]any)
	assert.Equal(t, corev1.LabelHostname, replacement["topologyKey"])
	assert.NotContains(t, replacement, "futureOfReplaced", "the replaced constraint's field goes with it")
	assert.NotContains(t, replacement, "futureOfKept")
	assert.Len(t, at(t, out, "/spec/topologySpreadConstraints"), 2)
}

// What the mutation removes is removed, the unknown fields inside it too; unknown fields next
// to it stay.
func TestPatchRemovesWhatTheMutationRemoves(t *testing.T) {
	resp := mutate(t, podWithFutureFields, func(pod *corev1.Pod) {
		pod.Spec.NodeSelector = nil
		pod.Spec.Affinity = nil
		pod.Spec.Containers[0].Env = nil
	})
	out := patched(t, []byte(podWithFutureFields), resp.Patches)
	spec := at(t, out, "/spec").(map[string]any)
	assert.NotContains(t, spec, "nodeSelector")
	assert.NotContains(t, spec, "affinity", "removed with the unknown field inside it")
	assert.NotContains(t, at(t, out, "/spec/containers/0"), "env")
	assert.Equal(t, true, at(t, out, "/spec/containers/0/futureContainer"))
	assert.Equal(t, "m", at(t, out, "/metadata/futureMeta"))
}

// Without fields the types do not know, the patch is exactly the plain diff, as Gardener's
// handlers (controller-runtime's defaulter) answer.
func TestPatchWithoutUnknownFieldsIsThePlainDiff(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"main","image":"busybox"}],"nodeSelector":{"x":"y"}}}`
	change := func(pod *corev1.Pod) {
		pod.Spec.NodeSelector = nil
		pod.Labels["c"] = "d"
	}
	resp := mutate(t, raw, change)
	pod := &corev1.Pod{}
	require.NoError(t, json.Unmarshal([]byte(raw), pod))
	change(pod)
	plain := admission.PatchResponseFromRaw([]byte(raw), mustMarshal(t, pod))
	assert.ElementsMatch(t, plain.Patches, resp.Patches)
}

// A field the request sets to null that the typed encoding omits stays as it was.
func TestPatchKeepsNulls(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":null},"spec":{"containers":[{"name":"main","image":"busybox"}],"nodeSelector":null}}`
	resp := mutate(t, raw, func(pod *corev1.Pod) { pod.Spec.Containers[0].Image = "alpine" })
	assert.Equal(t, []string{"/spec/containers/0/image"}, opPaths(resp))
}

func opPaths(resp admission.Response) []string {
	var paths []string
	for _, op := range resp.Patches {
		if !strings.HasSuffix(op.Path, "/resources") && op.Path != "/status" && op.Path != "/metadata/creationTimestamp" {
			paths = append(paths, op.Path)
		}
	}
	return paths
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// The kube-apiserver may know fields our k8s.io/api does not (it is newer): every mutating
// webhook is sent objects with such fields at every level, in the lists it mutates included,
// mutates them, and leaves those fields as they were.
func TestEveryMutatingWebhookKeepsFieldsTheTypesDoNotKnow(t *testing.T) {
	const namespace = "garden"
	file, err := componentconfig.ResourceManager("")
	require.NoError(t, err)
	cfg := file.ResourceManagerConfiguration
	cfg.Webhooks.KubernetesServiceHost.Host = "api.example.com"
	cfg.Webhooks.SystemComponentsConfig = rmv1alpha1.SystemComponentsConfigWebhookConfig{
		Enabled:         true,
		PodNodeSelector: map[string]string{"worker.gardener.cloud/system-components": "true"},
		PodTolerations:  []corev1.Toleration{{Key: "system", Operator: corev1.TolerationOpExists}},
	}
	cfg.Webhooks.HighAvailabilityConfig.DefaultNotReadyTolerationSeconds = new(int64(60))
	cfg.Webhooks.HighAvailabilityConfig.DefaultUnreachableTolerationSeconds = new(int64(60))
	cfg.Webhooks.PodSchedulerName.SchedulerName = new("bin-packing-scheduler")
	target := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Annotations: map[string]string{
			resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: "zone",
			resourcesv1alpha1.HighAvailabilityConfigZones:                "a,b,c",
		}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: namespace}, AutomountServiceAccountToken: new(false)},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "pool", Value: "system", Effect: corev1.TaintEffectNoSchedule}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
	).Build()
	deps := webhook.Deps{Source: target, Target: target, Config: cfg, Clock: testclock.NewFakePassiveClock(time.Unix(0, 0)), Log: webhooktest.Log}

	pod := `{
	  "apiVersion": "v1", "kind": "Pod", "futureTop": {"x": 1},
	  "metadata": {"name": "p", "namespace": "garden", "futureMeta": "m",
	    "labels": {"pod-template-hash": "abc", "app": "x"}},
	  "spec": {
	    "futureSpec": [1, {"y": 2}],
	    "serviceAccountName": "robot",
	    "containers": [{"name": "main", "image": "busybox", "futureContainer": "c",
	      "env": [{"name": "A", "value": "1", "futureEnv": "e"}],
	      "volumeMounts": [{"name": "data", "mountPath": "/data", "futureMount": "vm"}]}],
	    "initContainers": [{"name": "init", "image": "busybox", "futureContainer": "i"}],
	    "volumes": [{"name": "data", "emptyDir": {"futureEmptyDir": 1}, "futureVolume": "v"}],
	    "tolerations": [{"key": "dedicated", "operator": "Exists", "futureToleration": "t"}],
	    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone-x", "whenUnsatisfiable": "DoNotSchedule",
	      "labelSelector": {"matchLabels": {"app": "x"}, "futureSelector": "s"}, "matchLabelKeys": ["pod-template-hash"], "futureConstraint": "tsc"}]
	  },
	  "status": {"futureStatus": "s"}
	}`
	podUnknown := []string{
		"/futureTop", "/metadata/futureMeta", "/spec/futureSpec", "/spec/containers/0/futureContainer",
		"/spec/containers/0/env/0/futureEnv", "/spec/containers/0/volumeMounts/0/futureMount",
		"/spec/initContainers/0/futureContainer", "/spec/volumes/0/futureVolume", "/spec/volumes/0/emptyDir/futureEmptyDir",
		"/spec/tolerations/0/futureToleration", "/spec/topologySpreadConstraints/0/futureConstraint",
		"/spec/topologySpreadConstraints/0/labelSelector/futureSelector", "/status/futureStatus",
	}
	deployment := `{
	  "apiVersion": "apps/v1", "kind": "Deployment", "futureTop": 1,
	  "metadata": {"name": "d", "namespace": "garden", "futureMeta": "m",
	    "labels": {"high-availability-config.resources.gardener.cloud/type": "server"}},
	  "spec": {"replicas": 1, "futureStrategy": {"z": true},
	    "selector": {"matchLabels": {"app": "x"}},
	    "template": {"metadata": {"labels": {"app": "x"}, "futureTemplateMeta": 1},
	      "spec": {"futurePodSpec": "p",
	        "containers": [{"name": "main", "image": "busybox", "futureContainer": "c"}],
	        "tolerations": [{"key": "dedicated", "operator": "Exists", "futureToleration": "t"}],
	        "affinity": {"nodeAffinity": {"futureNodeAffinity": "n", "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
	          {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"], "futureRequirement": "r"}], "futureTerm": "term"}]}}},
	        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "custom", "whenUnsatisfiable": "DoNotSchedule",
	          "labelSelector": {"matchLabels": {"app": "x"}}, "futureConstraint": "tsc"}]}}},
	  "status": {"futureStatus": "s"}
	}`
	deploymentUnknown := []string{
		"/futureTop", "/metadata/futureMeta", "/spec/futureStrategy", "/spec/template/metadata/futureTemplateMeta",
		"/spec/template/spec/futurePodSpec", "/spec/template/spec/containers/0/futureContainer",
		"/spec/template/spec/tolerations/0/futureToleration", "/spec/template/spec/affinity/nodeAffinity/futureNodeAffinity",
		"/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/futureTerm",
		"/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/futureRequirement",
		"/spec/template/spec/topologySpreadConstraints/0/futureConstraint", "/status/futureStatus",
	}
	slice := `{
	  "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "futureTop": 1, "addressType": "IPv4",
	  "metadata": {"name": "s", "namespace": "garden", "futureMeta": "m"},
	  "endpoints": [{"addresses": ["10.0.0.1"], "zone": "a", "futureEndpoint": "e", "conditions": {"ready": true, "futureCondition": "c"}}],
	  "ports": [{"port": 53, "futurePort": "p"}]
	}`
	sliceUnknown := []string{"/futureTop", "/metadata/futureMeta", "/endpoints/0/futureEndpoint", "/endpoints/0/conditions/futureCondition", "/ports/0/futurePort"}

	for _, tc := range []struct {
		constructor webhook.Constructor
		kind        metav1.GroupVersionKind
		object      string
		unknown     []string
		// mutated is a path the webhook sets.
		mutated string
	}{
		{kubernetesservicehost.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/containers/0/env/1"},
		{podtopologyspreadconstraints.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/topologySpreadConstraints/0/labelSelector/matchLabels/pod-template-hash"},
		{systemcomponentsconfig.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/nodeSelector"},
		{projectedtokenmount.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/volumes/1"},
		{highavailabilityconfig.Webhook, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, deployment, deploymentUnknown, "/spec/template/spec/topologySpreadConstraints/1"},
		{endpointslicehints.Webhook, metav1.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}, slice, sliceUnknown, "/endpoints/0/hints"},
		{podschedulername.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/schedulerName"},
		{seccompprofile.Webhook, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod, podUnknown, "/spec/securityContext/seccompProfile"},
	} {
		t.Run(tc.constructor.Name, func(t *testing.T) {
			wh, err := tc.constructor.New(deps)
			require.NoError(t, err)
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "uid", Kind: tc.kind, Namespace: namespace, Operation: admissionv1.Create,
				Object: runtime.RawExtension{Raw: []byte(tc.object)},
			}}
			resp := review(t, wh, req)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			require.NotEmpty(t, resp.Patch, "the webhook mutates the object")
			var ops []map[string]any
			require.NoError(t, json.Unmarshal(resp.Patch, &ops))
			out := patched(t, []byte(tc.object), ops)
			in := tree(t, tc.object)
			at(t, out, tc.mutated)
			for _, path := range tc.unknown {
				assert.Equal(t, at(t, in, path), at(t, out, path), path)
			}
		})
	}
}

// review POSTs req to wh as the kube-apiserver does and returns the answer.
func review(t *testing.T, wh webhook.Webhook, req admission.Request) *admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	httpReq := httptest.NewRequest(http.MethodPost, wh.Path, bytes.NewReader(webhooktest.AdmissionReview(t, req)))
	httpReq.Header.Set("Content-Type", "application/json")
	wh.Handler.ServeHTTP(rec, httpReq)
	require.Equal(t, http.StatusOK, rec.Code)
	var answer admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
	require.NotNil(t, answer.Response)
	return answer.Response
}

// BenchmarkPatch answers a Pod mutation (an env var appended) with and without fields the
// types do not know: only the latter pays for the three-way merge.
func BenchmarkPatch(b *testing.B) {
	known := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","labels":{"app":"x"}},"spec":{"containers":[{"name":"main","image":"busybox","env":[{"name":"A","value":"1"}]}],"tolerations":[{"key":"a","operator":"Exists"}]}}`
	for _, bc := range []struct{ name, raw string }{{"known-fields", known}, {"unknown-fields", podWithFutureFields}} {
		b.Run(bc.name, func(b *testing.B) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(bc.raw)}}}
			b.ReportAllocs()
			for b.Loop() {
				pod := &corev1.Pod{}
				decoded, err := webhook.Decode(req, pod)
				if err != nil {
					b.Fatal(err)
				}
				pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "B", Value: "2"})
				if resp := webhook.Patch(req, decoded, pod); !resp.Allowed {
					b.Fatal(resp.Result)
				}
			}
		})
	}
}

// FuzzPatch: whatever object arrives, the patch applies to it as sent, and what it yields
// decodes to exactly the mutated typed object (the patch neither misses a change nor makes
// one of its own in what the types know).
func FuzzPatch(f *testing.F) {
	f.Add([]byte(podWithFutureFields))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"a","x":1},{"name":"b","y":[{}]}]}}`))
	f.Add([]byte(`{"metadata":{"labels":null},"spec":{"tolerations":[{"key":"a","z":null},{"key":"b"}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
		pod := &corev1.Pod{}
		decoded, err := webhook.Decode(req, pod)
		if err != nil {
			return
		}
		var asObject map[string]any
		if json.Unmarshal(raw, &asObject) != nil || asObject == nil {
			return // not an object: no API server sends one
		}
		// Mutations like the webhooks': append to lists, delete from them, set a member.
		if len(pod.Spec.Containers) > 0 {
			pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "X", Value: "1"})
		}
		if len(pod.Spec.Tolerations) > 0 {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations[1:], corev1.Toleration{Key: "added", Operator: corev1.TolerationOpExists})
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels["mutated"] = "true"
		resp := webhook.Patch(req, decoded, pod)
		if !resp.Allowed {
			t.Fatalf("not allowed: %+v", resp.Result)
		}
		ops, err := json.Marshal(resp.Patches)
		require.NoError(t, err)
		out := raw
		if len(resp.Patches) > 0 {
			patch, err := jsonpatch.DecodePatch(ops)
			require.NoError(t, err)
			out, err = patch.Apply(raw)
			require.NoError(t, err, "the patch applies to the object as sent")
		}
		got := &corev1.Pod{}
		require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(out, got), "decoded as the kube-apiserver decodes")
		assert.Equal(t, mustMarshal(t, pod), mustMarshal(t, got))
	})
}
