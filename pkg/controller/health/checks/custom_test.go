package checks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// custom builds an unstructured object of gvk with the given generation, spec and status, as
// read from the API server (numbers as int64).
func custom(gvk schema.GroupVersionKind, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("ns")
	u.SetName("obj")
	u.SetGeneration(generation)
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func monitoringCond(t, status string, observedGeneration int64) map[string]any {
	return map[string]any{"type": t, "status": status, "reason": "R", "message": "M", "observedGeneration": observedGeneration, "lastTransitionTime": "2024-01-01T00:00:00Z"}
}

func TestMonitoring(t *testing.T) {
	available, reconciled := monitoringCond("Available", "True", 2), monitoringCond("Reconciled", "True", 2)
	for _, tc := range []struct {
		name            string
		spec, status    map[string]any
		wantHealth      string
		wantProgressing string
	}{
		{name: "healthy, replicas default to one",
			status: map[string]any{"availableReplicas": int64(1), "updatedReplicas": int64(1), "conditions": []any{available, reconciled}}},
		{name: "healthy with replicas", spec: map[string]any{"replicas": int64(2)},
			status: map[string]any{"availableReplicas": int64(2), "updatedReplicas": int64(2), "conditions": []any{available, reconciled}}},
		{name: "no status",
			wantHealth: `condition "Available" is missing`, wantProgressing: `condition "Reconciled" is missing`},
		{name: "conditions of an older generation",
			status:     map[string]any{"availableReplicas": int64(1), "updatedReplicas": int64(1), "conditions": []any{monitoringCond("Available", "True", 1), monitoringCond("Reconciled", "True", 1)}},
			wantHealth: "observed generation outdated (1/2)", wantProgressing: "observed generation outdated (1/2)"},
		{name: "conditions not true",
			status:          map[string]any{"availableReplicas": int64(1), "updatedReplicas": int64(1), "conditions": []any{monitoringCond("Available", "Degraded", 2), monitoringCond("Reconciled", "False", 2)}},
			wantHealth:      `condition "Available" has invalid status Degraded (expected True) due to R: M`,
			wantProgressing: `condition "Reconciled" has invalid status False (expected True) due to R: M`},
		{name: "replicas missing", spec: map[string]any{"replicas": int64(3)},
			status:          map[string]any{"availableReplicas": int64(2), "updatedReplicas": int64(1), "conditions": []any{available, reconciled}},
			wantHealth:      "not enough available replicas (2/3)",
			wantProgressing: "1 of 3 replica(s) have been updated"},
	} {
		for _, kind := range []struct {
			gvk         schema.GroupVersionKind
			health      func(*unstructured.Unstructured) error
			progressing func(*unstructured.Unstructured) (bool, string, error)
		}{
			{PrometheusKind, CheckPrometheus, PrometheusProgressing},
			{AlertmanagerKind, CheckAlertmanager, AlertmanagerProgressing},
		} {
			t.Run(kind.gvk.Kind+"/"+tc.name, func(t *testing.T) {
				u := custom(kind.gvk, 2, tc.spec, tc.status)
				assert.Equal(t, tc.wantHealth, errString(kind.health(u)))
				progressing, description, err := kind.progressing(u)
				require.NoError(t, err)
				assert.Equal(t, tc.wantProgressing != "", progressing)
				if progressing {
					assert.Equal(t, tc.wantProgressing, description)
				} else {
					assert.Equal(t, kind.gvk.Kind+" is fully rolled out", description)
				}
			})
		}
	}
}

func TestCheckVerticalPodAutoscaler(t *testing.T) {
	cond := func(t, status string) map[string]any {
		return map[string]any{"type": t, "status": status, "reason": "R", "message": "M"}
	}
	for _, tc := range []struct {
		name   string
		status map[string]any
		want   string
	}{
		{"no status", nil, ""},
		{"observed generation is not compared", map[string]any{"observedGeneration": int64(1)}, ""},
		{"config supported", map[string]any{"conditions": []any{cond("RecommendationProvided", "False"), cond("ConfigUnsupported", "False")}}, ""},
		{"config unsupported", map[string]any{"conditions": []any{cond("ConfigUnsupported", "True")}},
			`condition "ConfigUnsupported" has invalid status True (expected False) due to R: M`},
		{"first condition of the type counts", map[string]any{"conditions": []any{cond("ConfigUnsupported", "False"), cond("ConfigUnsupported", "True")}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errString(CheckVerticalPodAutoscaler(custom(VerticalPodAutoscalerKind, 5, nil, tc.status))))
		})
	}
}

func TestCertificateAndIssuer(t *testing.T) {
	ready := map[string]any{"type": "Ready", "status": "True", "reason": "CertificateIssued", "message": "ok"}
	notReady := map[string]any{"type": "Ready", "status": "False", "reason": "Pending", "message": "waiting"}
	for _, tc := range []struct {
		name            string
		generation      int64
		status          map[string]any
		wantCertificate string
		wantIssuer      string
		wantProgressing string
	}{
		{name: "ready", generation: 2, status: map[string]any{"observedGeneration": int64(2), "state": "Ready", "conditions": []any{ready}}},
		{name: "ready without conditions", generation: 1, status: map[string]any{"observedGeneration": int64(1), "state": "Ready"}},
		{name: "no status", generation: 1,
			wantCertificate: `certificate state is "" ("Ready" expected)`, wantIssuer: `issuer state is "" ("Ready" expected)`,
			wantProgressing: "observed generation outdated (0/1)"},
		{name: "pending", generation: 3, status: map[string]any{"observedGeneration": int64(2), "state": "Pending"},
			wantCertificate: `certificate state is "Pending" ("Ready" expected)`, wantIssuer: `issuer state is "Pending" ("Ready" expected)`,
			wantProgressing: "observed generation outdated (2/3)"},
		{name: "ready state but condition not", generation: 1, status: map[string]any{"observedGeneration": int64(1), "state": "Ready", "conditions": []any{notReady}},
			wantCertificate: `condition "Ready" has invalid status False (expected True) due to Pending: waiting`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert := custom(CertificateKind, tc.generation, nil, tc.status)
			assert.Equal(t, tc.wantCertificate, errString(CheckCertificate(cert)))
			issuer := custom(IssuerKind, tc.generation, nil, tc.status)
			assert.Equal(t, tc.wantIssuer, errString(CheckIssuer(issuer)))

			for kind, progressingFunc := range map[string]func(*unstructured.Unstructured) (bool, string, error){
				"Certificate": CertificateProgressing, "Issuer": IssuerProgressing,
			} {
				progressing, description, err := progressingFunc(custom(CertificateKind, tc.generation, nil, tc.status))
				require.NoError(t, err)
				assert.Equal(t, tc.wantProgressing != "", progressing, kind)
				if progressing {
					assert.Equal(t, tc.wantProgressing, description, kind)
				} else {
					assert.Equal(t, kind+" is fully rolled out", description)
				}
			}
		})
	}
}

// A field of the wrong type fails like the typed API's decoding, not as a verdict.
func TestCustomKindsThatDoNotDecode(t *testing.T) {
	badMonitoring := custom(PrometheusKind, 1, map[string]any{"replicas": "two"}, nil)
	badConditions := custom(CertificateKind, 1, nil, map[string]any{"conditions": "none"})
	for name, err := range map[string]error{
		"CheckPrometheus":            CheckPrometheus(badMonitoring),
		"CheckAlertmanager":          CheckAlertmanager(badMonitoring),
		"CheckVerticalPodAutoscaler": CheckVerticalPodAutoscaler(badConditions),
		"CheckCertificate":           CheckCertificate(badConditions),
		"CheckIssuer":                CheckIssuer(custom(IssuerKind, 1, nil, map[string]any{"state": int64(1)})),
	} {
		var undecodable *decodeError
		assert.ErrorAs(t, err, &undecodable, name)
	}
	for name, progressing := range map[string]func(*unstructured.Unstructured) (bool, string, error){
		"PrometheusProgressing": PrometheusProgressing, "AlertmanagerProgressing": AlertmanagerProgressing,
	} {
		_, _, err := progressing(badMonitoring)
		assert.Error(t, err, name)
	}
	for name, progressing := range map[string]func(*unstructured.Unstructured) (bool, string, error){
		"CertificateProgressing": CertificateProgressing, "IssuerProgressing": IssuerProgressing,
	} {
		_, _, err := progressing(custom(CertificateKind, 1, nil, map[string]any{"observedGeneration": "1"}))
		assert.Error(t, err, name)
	}
}
