package vpainplaceupdates

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const mutatedLabel = "vpa-in-place-updates.resources.gardener.cloud/mutated"

// vpa is a VerticalPodAutoscaler as JSON, with spec members added to its targetRef.
func vpa(t testing.TB, labels map[string]any, spec map[string]any) []byte {
	t.Helper()
	metadata := map[string]any{"name": "vpa", "namespace": "shoot--p--s"}
	if labels != nil {
		metadata["labels"] = labels
	}
	s := map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
	for k, v := range spec {
		s[k] = v
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": metadata, "spec": s})
	require.NoError(t, err)
	return raw
}

func request(op admissionv1.Operation, raw []byte) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid", Operation: op, Namespace: "shoot--p--s", Name: "vpa", Object: runtime.RawExtension{Raw: raw},
	}}
	if op == admissionv1.Update {
		req.OldObject = runtime.RawExtension{Raw: raw}
	}
	return req
}

func review(t *testing.T, op admissionv1.Operation, raw []byte) (map[string]any, admission.Response) {
	t.Helper()
	out := map[string]any{}
	resp := webhooktest.Mutate(t, Handler(webhooktest.Log), request(op, raw), &out)
	return out, resp
}

func updatePolicy(out map[string]any) any {
	return out["spec"].(map[string]any)["updatePolicy"]
}

func labels(out map[string]any) any {
	return out["metadata"].(map[string]any)["labels"]
}

func TestUpdateMode(t *testing.T) {
	inPlace := map[string]any{"updateMode": "InPlaceOrRecreate"}
	for _, tc := range []struct {
		name         string
		updatePolicy any // absent when nil
		want         any
		mutated      bool
	}{
		{name: "no update policy (Auto)", want: inPlace, mutated: true},
		{name: "a null update policy (Auto)", updatePolicy: json.RawMessage(`null`), want: inPlace, mutated: true},
		{name: "no update mode (Auto)", updatePolicy: map[string]any{}, want: inPlace, mutated: true},
		{name: "a null update mode (Auto)", updatePolicy: map[string]any{"updateMode": nil}, want: inPlace, mutated: true},
		{name: "Auto", updatePolicy: map[string]any{"updateMode": "Auto"}, want: inPlace, mutated: true},
		{name: "Recreate", updatePolicy: map[string]any{"updateMode": "Recreate"}, want: inPlace, mutated: true},
		{name: "other members stay", updatePolicy: map[string]any{"updateMode": "Recreate", "minReplicas": float64(2)},
			want: map[string]any{"updateMode": "InPlaceOrRecreate", "minReplicas": float64(2)}, mutated: true},
		{name: "Off stays", updatePolicy: map[string]any{"updateMode": "Off"}, want: map[string]any{"updateMode": "Off"}},
		{name: "Initial stays", updatePolicy: map[string]any{"updateMode": "Initial"}, want: map[string]any{"updateMode": "Initial"}},
		{name: "InPlaceOrRecreate stays", updatePolicy: inPlace, want: inPlace},
		{name: "an empty mode stays (not the default)", updatePolicy: map[string]any{"updateMode": ""}, want: map[string]any{"updateMode": ""}},
		{name: "an unknown mode stays", updatePolicy: map[string]any{"updateMode": "Sometimes"}, want: map[string]any{"updateMode": "Sometimes"}},
	} {
		for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
			t.Run(tc.name+" on "+string(op), func(t *testing.T) {
				spec := map[string]any{}
				if tc.updatePolicy != nil {
					spec["updatePolicy"] = tc.updatePolicy
				}
				out, resp := review(t, op, vpa(t, map[string]any{"app": "web"}, spec))
				assert.Equal(t, tc.want, updatePolicy(out))
				if tc.mutated {
					assert.Equal(t, map[string]any{"app": "web", mutatedLabel: "true"}, labels(out))
				} else {
					assert.Equal(t, map[string]any{"app": "web"}, labels(out))
					assert.Empty(t, resp.Patches)
				}
			})
		}
	}
}

func TestLabelsAreMadeWhereMissing(t *testing.T) {
	out, _ := review(t, admissionv1.Create, vpa(t, nil, nil))
	assert.Equal(t, map[string]any{mutatedLabel: "true"}, labels(out))

	raw := []byte(`{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"vpa","labels":null},"spec":null}`)
	out, _ = review(t, admissionv1.Create, raw)
	assert.Equal(t, map[string]any{mutatedLabel: "true"}, labels(out))
	assert.Equal(t, map[string]any{"updateMode": "InPlaceOrRecreate"}, updatePolicy(out))
}

// Nothing but the update mode and the label changes, whatever else the VPA holds: fields of
// any VPA version, numbers as written.
func TestEverythingElseStays(t *testing.T) {
	spec := map[string]any{
		"resourcePolicy": map[string]any{"containerPolicies": []any{map[string]any{"containerName": "*", "minAllowed": map[string]any{"memory": "64Mi"}, "futurePolicy": true}}},
		"recommenders":   []any{map[string]any{"name": "custom"}},
		"futureSpec":     map[string]any{"big": json.Number("12345678901234567890")},
	}
	raw := vpa(t, nil, spec)
	out, resp := review(t, admissionv1.Create, raw)
	for _, op := range resp.Patches {
		assert.Contains(t, []string{"/spec/updatePolicy", "/metadata/labels"}, op.Path, "only the update mode and the label are patched")
	}
	in := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &in))
	delete(out["spec"].(map[string]any), "updatePolicy")
	delete(out["metadata"].(map[string]any), "labels")
	assert.Equal(t, in, out)
}

// As controller-runtime's defaulter, on which Gardener builds the webhook: DELETE is allowed
// untouched with code 200; what the VPA type would not decode is a 400.
func TestDeleteAndMalformedObjects(t *testing.T) {
	h := Handler(webhooktest.Log)
	del := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: vpa(t, nil, nil)}}})
	assert.True(t, del.Allowed)
	assert.Empty(t, del.Patches)
	assert.Equal(t, int32(http.StatusOK), del.Result.Code)

	for _, tc := range []struct{ name, raw, message string }{
		{name: "not json", raw: `{"spec":`, message: "couldn't get version/kind; json parse error: unexpected end of JSON input"},
		{name: "no content", raw: ``, message: "there is no content to decode"},
		{name: "data after the object", raw: `{"spec":{}} {}`},
		{name: "another kind", raw: `{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscalerCheckpoint"}`},
		{name: "another version", raw: `{"apiVersion":"autoscaling.k8s.io/v1beta2","kind":"VerticalPodAutoscaler"}`},
		// Gardener's typed decode words these as encoding/json does; so do we.
		{name: "a string spec", raw: `{"spec":"x"}`,
			message: "json: cannot unmarshal string into Go struct field VerticalPodAutoscaler.spec of type v1.VerticalPodAutoscalerSpec"},
		{name: "a list as update policy", raw: `{"spec":{"updatePolicy":[]}}`,
			message: "json: cannot unmarshal array into Go struct field VerticalPodAutoscalerSpec.spec.updatePolicy of type v1.PodUpdatePolicy"},
		{name: "a number as update mode", raw: `{"spec":{"updatePolicy":{"updateMode":5}}}`,
			message: "json: cannot unmarshal number into Go struct field PodUpdatePolicy.spec.updatePolicy.updateMode of type v1.UpdateMode"},
		{name: "a bool as update mode", raw: `{"spec":{"updatePolicy":{"updateMode":true}}}`,
			message: "json: cannot unmarshal bool into Go struct field PodUpdatePolicy.spec.updatePolicy.updateMode of type v1.UpdateMode"},
		{name: "an object as update mode", raw: `{"spec":{"updatePolicy":{"updateMode":{}}}}`,
			message: "json: cannot unmarshal object into Go struct field PodUpdatePolicy.spec.updatePolicy.updateMode of type v1.UpdateMode"},
		{name: "a string as labels", raw: `{"metadata":{"labels":"a=b"},"spec":{}}`,
			message: "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string"},
		{name: "a number as a label", raw: `{"metadata":{"labels":{"a":1}},"spec":{}}`,
			message: "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"},
		{name: "a list as metadata", raw: `{"metadata":[],"spec":{}}`,
			message: "json: cannot unmarshal array into Go struct field VerticalPodAutoscaler.metadata of type v1.ObjectMeta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), request(admissionv1.Create, []byte(tc.raw)))
			assert.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
			if tc.message != "" {
				assert.Equal(t, tc.message, resp.Result.Message)
			}
		})
	}
}

// null decodes into an empty VPA, as into Gardener's typed one, which then gets the mode.
func TestNullIsAnEmptyVPA(t *testing.T) {
	out, _ := review(t, admissionv1.Create, []byte(`null`))
	assert.Equal(t, map[string]any{"updateMode": "InPlaceOrRecreate"}, updatePolicy(out))
	assert.Equal(t, map[string]any{mutatedLabel: "true"}, labels(out))
}

func BenchmarkVPAInPlaceUpdates(b *testing.B) {
	wh := webhook.Admission(Name, Path, Handler(webhooktest.Log), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, request(admissionv1.Create, vpa(b, map[string]any{"app": "web"}, map[string]any{"updatePolicy": map[string]any{"updateMode": "Auto"}}))))
}

func FuzzVPAInPlaceUpdates(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(webhooktest.Log), webhooktest.Log),
		webhooktest.AdmissionReview(f, request(admissionv1.Create, vpa(f, nil, nil))),
		webhooktest.AdmissionReview(f, request(admissionv1.Update, vpa(f, map[string]any{"a": "b"}, map[string]any{"updatePolicy": map[string]any{"updateMode": "Off"}}))))
}
