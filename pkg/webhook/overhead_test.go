package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// overheadPod is a Deployment's pod as a kube-apiserver sends it for admission: labels, an
// owner, two containers with resources, probes, mounts and a topology spread constraint.
func overheadPod() *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/" + name + ":v1.2.3", Args: []string{"--v=2", "--port=8080"},
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 10},
			VolumeMounts:             []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config", ReadOnly: true}},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "app-7d9f8b6c5d-", Namespace: "shoot--p--a",
			Labels:          map[string]string{"app": "app", "pod-template-hash": "7d9f8b6c5d", "role": "controller"},
			Annotations:     map[string]string{"checksum/config": "0123456789abcdef0123456789abcdef"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-7d9f8b6c5d", UID: "d3f1c0de-0000-4000-8000-000000000001", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes:    []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}, MatchLabelKeys: []string{"pod-template-hash"}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "app",
			SchedulerName: corev1.DefaultSchedulerName, TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}

// overheadMutations are the two shapes of mutation: one that only adds (most webhooks), one
// that removes too (the path that checks for fields our types do not know).
var overheadMutations = map[string]func(*corev1.Pod){
	"add": func(pod *corev1.Pod) { pod.Labels["mutated"] = "true" },
	"remove": func(pod *corev1.Pod) {
		pod.Labels["mutated"] = "true"
		pod.Spec.TopologySpreadConstraints[0].MatchLabelKeys = nil
	},
}

// controllerRuntimeFloor is the path an admission request takes in Gardener's resource manager:
// controller-runtime's webhook server (its instrumentation), admission.Webhook, and a handler
// that decodes with admission.Decoder, mutates and answers PatchResponseFromRaw.
func controllerRuntimeFloor(path string, mutate func(*corev1.Pod)) http.Handler {
	decoder := admission.NewDecoder(kubernetesscheme.Scheme)
	server := crwebhook.NewServer(crwebhook.Options{})
	server.Register(path, &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		pod := &corev1.Pod{}
		if err := decoder.Decode(req, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		mutate(pod)
		marshaled, err := json.Marshal(pod)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, marshaled)
	})})
	return server.WebhookMux()
}

// ours is the path in this project's server (routes), for the same mutation through Mutator.
func ours(path string, mutate func(*corev1.Pod), tenants *clients.Clients, proofs *tenantproof.Ring) http.Handler {
	log := slog.New(slog.DiscardHandler)
	wh := Admission("overhead", path, Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(_ context.Context, _ admission.Request, pod *corev1.Pod) error {
		mutate(pod)
		return nil
	}), log)
	mux, _ := routes(ServeOptions{RequestTimeout: 10 * time.Second, Tenants: tenants, Proofs: proofs}, []Webhook{wh}, newServerMetrics(prometheus.NewRegistry()), log)
	return mux
}

func overheadReview(tb testing.TB) []byte {
	raw, err := json.Marshal(overheadPod())
	require.NoError(tb, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "0b5e5d2a-0000-4000-8000-000000000002", Operation: admissionv1.Create,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "shoot--p--a",
			Object: runtime.RawExtension{Raw: raw}},
	})
	require.NoError(tb, err)
	return body
}

// answer POSTs body to path and returns the patch answered.
func answer(tb testing.TB, h http.Handler, path string, body []byte) []byte {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil || !review.Response.Allowed {
		tb.Fatalf("not an allowed AdmissionReview answer (%v): %s", err, rec.Body.String())
	}
	return review.Response.Patch
}

// patchOps are a patch's operations in a canonical order: CreatePatch's come in map order.
func patchOps(t *testing.T, patch []byte) []jsonpatch.Operation {
	var ops []jsonpatch.Operation
	require.NoError(t, json.Unmarshal(patch, &ops))
	slices.SortFunc(ops, func(a, b jsonpatch.Operation) int { return strings.Compare(a.Operation+a.Path, b.Operation+b.Path) })
	return ops
}

// overheadTenants are the tenant shoot--p--a, the ring of the seed's proof key and the url of
// path at the tenant's path with its proof.
func overheadTenants(tb testing.TB, path string) (*clients.Clients, *tenantproof.Ring, string) {
	tenants, err := clients.New(clients.Options{Seed: tenanttest.Enrolled(tb, "https://127.0.0.1:1", tenanttest.CA(tb), "shoot--p--a"), Scheme: kubernetesscheme.Scheme})
	require.NoError(tb, err)
	key, proofs := testProofs(tb)
	return tenants, proofs, "/shoot--p--a" + tenantproof.Separator + key.Proof("shoot--p--a") + path
}

// Both paths answer the same patch, so that BenchmarkAdmissionOverhead compares like with like.
func TestOverheadPathsAnswerTheSamePatch(t *testing.T) {
	body := overheadReview(t)
	tenants, proofs, tenantURL := overheadTenants(t, "/mutate")
	for name, mutate := range overheadMutations {
		t.Run(name, func(t *testing.T) {
			floor := patchOps(t, answer(t, controllerRuntimeFloor("/mutate", mutate), "/mutate", body))
			require.NotEmpty(t, floor)
			assert.Equal(t, floor, patchOps(t, answer(t, ours("/mutate", mutate, nil, nil), "/mutate", body)))
			assert.Equal(t, floor, patchOps(t, answer(t, ours("/mutate", mutate, tenants, proofs), tenantURL, body)))
		})
	}
}

// BenchmarkAdmissionOverhead measures the fixed cost of an admission request in this project's
// server against controller-runtime's, which is what Gardener's resource manager serves, on the
// same pod and mutation: AdmissionReview decoding and encoding, metrics, the patch; and, in
// the multi-tenant mode, the tenant's path and its proof.
func BenchmarkAdmissionOverhead(b *testing.B) {
	body := overheadReview(b)
	tenants, proofs, tenantURL := overheadTenants(b, "/mutate")
	for _, name := range []string{"add", "remove"} {
		mutate := overheadMutations[name]
		for _, path := range []struct {
			name    string
			handler http.Handler
			url     string
		}{
			{"controller-runtime", controllerRuntimeFloor("/mutate", mutate), "/mutate"},
			{"ours", ours("/mutate", mutate, nil, nil), "/mutate"},
			{"ours-tenant", ours("/mutate", mutate, tenants, proofs), tenantURL},
		} {
			answer(b, path.handler, path.url, body)
			b.Run(name+"/"+path.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					req := httptest.NewRequest(http.MethodPost, path.url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					path.handler.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("HTTP %d", rec.Code)
					}
				}
			})
		}
	}
}
