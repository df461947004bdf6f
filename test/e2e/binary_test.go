package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/functions"
)

// The binary contract: `go build ./functions/<name>` serves CloudEvents on $PORT with
// /healthz, /readyz and Prometheus /metrics beside them, and answers bad events with a reason.
func TestFunctionBinariesServeHealthAndMetrics(t *testing.T) {
	for name, url := range land.URLs {
		t.Run(name, func(t *testing.T) {
			fn, ok := functions.ByName(name)
			require.True(t, ok)
			require.NotEmpty(t, fn.Sweeps, "every function has a sweep")
			sweep := fn.Sweeps[0].Name
			for _, path := range []string{"/healthz", "/readyz"} {
				code, _ := call(t, http.MethodGet, url+path, nil, "")
				assert.Equal(t, http.StatusOK, code, path)
			}

			ping := map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "e2e", "Ce-Source": "e2e", "Ce-Type": "dev.knative.sources.ping"}
			// Only its Trigger may send it events (pkg/eventauth), as in config/.
			code, body := call(t, http.MethodPost, url, ping, `{"sweep":"`+sweep+`"}`)
			assert.Equal(t, http.StatusUnauthorized, code, body)
			ping["Authorization"] = "Bearer " + senderToken(t, name)
			code, body = call(t, http.MethodPost, url, ping, `{"sweep":"no-such-sweep"}`)
			assert.Equal(t, http.StatusUnprocessableEntity, code)
			assert.Contains(t, body, "no-such-sweep")
			code, body = call(t, http.MethodPost, url, ping, `{"sweep":"`+sweep+`"}`)
			require.Equal(t, http.StatusOK, code, body)

			_, metrics := call(t, http.MethodGet, url+"/metrics", nil, "")
			for _, want := range []string{
				`gardener_knative_events_total{function="` + name + `",outcome="rejected",type="dev.knative.sources.ping"} 1`,
				`gardener_knative_event_sender_refusals_total{reason="missing"} 1`,
				`gardener_knative_api_requests_total{code="200",resource=`,
				`gardener_knative_sweep_duration_seconds_count{function="` + name + `",result="done",sweep="` + sweep + `"}`,
				"process_resident_memory_bytes",
			} {
				assert.Contains(t, metrics, want)
			}
		})
	}
}

// senderToken is a token of function name's Trigger, as the Broker sends its events with.
func senderToken(t *testing.T, name string) string {
	t.Helper()
	token, err := land.SenderToken(t.Context(), name)
	require.NoError(t, err)
	return token
}

func call(t *testing.T, method, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
