package webhook

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// unread is a body that fails the test when read: a shed request's body is never read.
type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Error("a shed request's body was read")
	return 0, io.EOF
}

// holding is a handler that keeps every request it gets until released.
type holding struct {
	entered chan struct{}
	release chan struct{}
}

func newHolding() *holding {
	return &holding{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (h *holding) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h.entered <- struct{}{}
	<-h.release
	_, _ = w.Write([]byte("served"))
}

// hold starts a request of key with a body of n bytes (n < 0: unknown length) that the handler
// keeps; it returns once the handler has it.
func hold(t *testing.T, f *fairShare, h *holding, key tenant.Name, n int64, wg *sync.WaitGroup) {
	t.Helper()
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := httptest.NewRecorder()
		f.Serve(w, request(n, strings.NewReader(strings.Repeat("x", int(max(n, 0))))), key, h)
		assert.Equal(t, http.StatusOK, w.Code)
	}()
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the request was not admitted")
	}
}

func request(n int64, body io.Reader) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/x", body)
	r.ContentLength = n
	return r
}

// shed sends a request that must be shed with code and reason, its body unread.
func shed(t *testing.T, f *fairShare, key tenant.Name, n int64, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	w := httptest.NewRecorder()
	f.Serve(w, request(n, unread{t}), key, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("a shed request reached the webhook") }))
	require.Equal(t, code, w.Code, w.Body.String())
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var status metav1.Status
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
	assert.Equal(t, "Status", status.Kind)
	assert.Equal(t, metav1.StatusFailure, status.Status)
	assert.Equal(t, int32(code), status.Code)
	assert.Equal(t, reason, status.Reason)
	if code == http.StatusTooManyRequests {
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		require.NotNil(t, status.Details)
		assert.Equal(t, int32(1), status.Details.RetryAfterSeconds)
	}
	return status
}

func served(t *testing.T, f *fairShare, key tenant.Name, n int64) {
	t.Helper()
	w := httptest.NewRecorder()
	f.Serve(w, request(n, strings.NewReader(strings.Repeat("x", int(n)))), key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		_, _ = w.Write([]byte("served"))
	}))
	assert.Equal(t, http.StatusOK, w.Code, "%s: %s", key, w.Body.String())
}

func newTestShare(limits Fairness) (*fairShare, *serverMetrics) {
	metrics := newServerMetrics(prometheus.NewRegistry())
	return newFairShare(limits, metrics), metrics
}

func TestFairShareNilCallsNext(t *testing.T) {
	var f *fairShare
	called := false
	f.Serve(httptest.NewRecorder(), request(0, http.NoBody), "shoot--a", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	assert.True(t, called)
}

// A tenant at its bound of requests in flight is shed; another tenant, and the same one once
// its requests end, are served.
func TestFairShareBoundsEachTenantsRequests(t *testing.T) {
	f, metrics := newTestShare(Fairness{TenantMaxInFlight: 2})
	h := newHolding()
	var wg sync.WaitGroup
	hold(t, f, h, "shoot--a", 10, &wg)
	hold(t, f, h, "shoot--a", 10, &wg)
	status := shed(t, f, "shoot--a", 10, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	assert.Contains(t, status.Message, `tenant "shoot--a" has 2 requests in flight`)
	served(t, f, "shoot--b", 10)
	served(t, f, "", 10)
	close(h.release)
	wg.Wait()
	served(t, f, "shoot--a", 10)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedTenantRequests)))
	assert.Empty(t, f.tenants, "no tenant is remembered without requests in flight")
	assert.Zero(t, f.bytes)
}

// A tenant's bodies in flight are bounded: a body of unknown length counts as the longest.
func TestFairShareBoundsEachTenantsBytes(t *testing.T) {
	f, metrics := newTestShare(Fairness{MaxRequestBytes: 1000, TenantMaxBytesInFlight: 1000 + 2*requestOverhead + 10, MaxBytesInFlight: 1 << 20})
	h := newHolding()
	var wg sync.WaitGroup
	hold(t, f, h, "shoot--a", -1, &wg)
	status := shed(t, f, "shoot--a", 1000, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	assert.Contains(t, status.Message, "TENANT_MAX_BYTES_IN_FLIGHT")
	served(t, f, "shoot--a", 10)
	served(t, f, "shoot--b", 1000)
	close(h.release)
	wg.Wait()
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedTenantBytes)))
	assert.Zero(t, f.bytes)
}

// All tenants' bodies in flight are bounded, whoever sends them.
func TestFairShareBoundsAllTenantsBytes(t *testing.T) {
	f, metrics := newTestShare(Fairness{MaxRequestBytes: 1000, TenantMaxBytesInFlight: 1000 + requestOverhead, MaxBytesInFlight: 2 * (1000 + requestOverhead)})
	h := newHolding()
	var wg sync.WaitGroup
	hold(t, f, h, "shoot--a", 1000, &wg)
	hold(t, f, h, "", 1000, &wg)
	status := shed(t, f, "shoot--c", 1000, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	assert.Contains(t, status.Message, "MAX_BYTES_IN_FLIGHT")
	close(h.release)
	wg.Wait()
	served(t, f, "shoot--c", 1000)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedBytes)))
}

// Tenants that flood together fill three quarters of MAX_BYTES_IN_FLIGHT at most: the last
// quarter is for tenants that hold little or nothing.
func TestFairShareKeepsRoomForModestTenants(t *testing.T) {
	f, metrics := newTestShare(Fairness{MaxRequestBytes: 2 << 20, TenantMaxBytesInFlight: 4 << 20, MaxBytesInFlight: 8 << 20})
	require.NoError(t, f.limits.check(10*time.Second))
	h := newHolding()
	var wg sync.WaitGroup
	const large = 1536 << 10
	hold(t, f, h, "shoot--a", large, &wg)
	hold(t, f, h, "shoot--a", large, &wg)
	hold(t, f, h, "shoot--b", large, &wg)
	shed(t, f, "shoot--b", large, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedBytes)))
	served(t, f, "shoot--c", 4<<10)
	served(t, f, "", 4<<10)
	// A tenant that holds nothing may take the quarter for one large request, not for two.
	hold(t, f, h, "shoot--c", large, &wg)
	shed(t, f, "shoot--c", large, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
	close(h.release)
	wg.Wait()
	served(t, f, "shoot--c", large)
}

// A body longer than MAX_REQUEST_BYTES is refused unread when its length is known, and cut when
// it is not.
func TestFairShareBoundsABody(t *testing.T) {
	f, metrics := newTestShare(Fairness{MaxRequestBytes: 1000})
	status := shed(t, f, "shoot--a", 1001, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	assert.Contains(t, status.Message, "MAX_REQUEST_BYTES")
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedTooLarge)))

	var readErr error
	f.Serve(httptest.NewRecorder(), request(-1, strings.NewReader(strings.Repeat("x", 2000))), "shoot--a", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, readErr = io.ReadAll(r.Body)
	}))
	var tooLong *http.MaxBytesError
	assert.True(t, errors.As(readErr, &tooLong), "a chunked body past the limit is cut: %v", readErr)
}

// What a request holds is released even when the webhook panics.
func TestFairShareReleasesOnPanic(t *testing.T) {
	f, _ := newTestShare(Fairness{})
	assert.Panics(t, func() {
		f.Serve(httptest.NewRecorder(), request(10, strings.NewReader("0123456789")), "shoot--a", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	})
	assert.Empty(t, f.tenants)
	assert.Zero(t, f.bytes)
}

// The seed's unprefixed paths get their share too (the key ""), in front of the webhook.
func TestRoutesShareTheUnprefixedPaths(t *testing.T) {
	reached := false
	wh := Webhook{Name: "x", Path: "/webhooks/x", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })}
	metrics := newServerMetrics(prometheus.NewRegistry())
	mux, _ := routes(ServeOptions{RequestTimeout: time.Second, Fairness: Fairness{MaxRequestBytes: 100}}, []Webhook{wh}, metrics, slog.New(slog.DiscardHandler))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhooks/x", strings.NewReader(strings.Repeat("x", 101))))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.False(t, reached)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.shed.WithLabelValues(shedTooLarge)))
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhooks/x", strings.NewReader("{}")))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.True(t, reached)
}

func TestFairnessFromTheEnvironmentAndChecked(t *testing.T) {
	t.Setenv("MAX_REQUEST_BYTES", "3Mi")
	t.Setenv("TENANT_MAX_BYTES_IN_FLIGHT", "4194304")
	t.Setenv("READ_TIMEOUT", "2s")
	var f Fairness
	require.NoError(t, envconfig.Process("", &f))
	assert.Equal(t, byteSize(3<<20), f.MaxRequestBytes)
	assert.Equal(t, byteSize(4<<20), f.TenantMaxBytesInFlight)
	assert.Equal(t, 2*time.Second, f.ReadTimeout)
	require.NoError(t, f.check(10*time.Second))
	d := f.withDefaults()
	assert.Equal(t, DefaultTenantMaxInFlight, d.TenantMaxInFlight)
	assert.Equal(t, byteSize(DefaultMaxBytesInFlight), d.MaxBytesInFlight)
	assert.Equal(t, DefaultWriteTimeout, d.WriteTimeout)

	t.Setenv("MAX_BYTES_IN_FLIGHT", "1.5")
	assert.Error(t, envconfig.Process("", &f), "no whole number of bytes")

	require.NoError(t, Fairness{}.check(10*time.Second), "the defaults fit together")
	assert.ErrorContains(t, Fairness{TenantMaxBytesInFlight: DefaultMaxRequestBytes}.check(10*time.Second), "the largest request is never served")
	assert.ErrorContains(t, Fairness{MaxBytesInFlight: DefaultTenantMaxBytesInFlight - 1}.check(10*time.Second), "the largest request is never served")
	assert.ErrorContains(t, Fairness{WriteTimeout: 12 * time.Second}.check(10*time.Second), "WRITE_TIMEOUT")
	assert.ErrorContains(t, Fairness{TenantMaxInFlight: -1}.check(10*time.Second), "negative")
}
