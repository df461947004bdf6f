package serve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRunServesHealthAndShutsDownGracefully(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	app := http.NewServeMux()
	app.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = w.Write([]byte("done"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- Run(ctx, Options{Addr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second, Ready: func(a net.Addr) { addrs <- a }},
			app, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	url := "http://" + (<-addrs).String()
	assert.Equal(t, http.StatusOK, get(url+"/healthz"))
	assert.Equal(t, http.StatusOK, get(url+"/readyz"))
	assert.Equal(t, http.StatusOK, get(url+"/metrics"))

	// A request in flight when SIGTERM arrives is finished, not cut off.
	inFlight := make(chan int, 1)
	go func() { inFlight <- get(url + "/slow") }()
	<-started
	cancel()
	require.Eventually(t, func() bool { return get(url+"/readyz") != http.StatusOK }, 5*time.Second, 5*time.Millisecond, "not ready once shutting down")
	close(release)
	assert.Equal(t, http.StatusOK, <-inFlight)
	require.NoError(t, <-served)
	assert.Equal(t, 0, get(url+"/healthz"), "the listener is closed after shutdown")
}

// After ctx ends, a server with a drain delay goes on serving for it, fails readiness and closes
// each connection after its response, so a kept-alive caller reconnects instead of racing the
// close of its idle connection; then it shuts down.
func TestRunDrainsBeforeShuttingDown(t *testing.T) {
	app := http.NewServeMux()
	app.HandleFunc("/hook", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allowed")) })
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Addr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second, DrainDelay: time.Second, Ready: func(a net.Addr) { addr <- a }},
			app, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	}()
	base := "http://" + (<-addr).String()
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	assert.False(t, get("/hook").Close, "kept alive while serving")

	cancel()
	time.Sleep(100 * time.Millisecond) // well inside the drain: without one, the server is gone by now
	resp := get("/hook")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "still served while draining")
	assert.True(t, resp.Close, "and the connection closed after the response")
	assert.Equal(t, http.StatusServiceUnavailable, get("/readyz").StatusCode)
	require.NoError(t, <-done)
}

// Go's profiles are served only when asked for.
func TestRunServesProfilesOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		addrs := make(chan net.Addr, 1)
		served := make(chan error, 1)
		go func() {
			served <- Run(ctx, Options{Addr: "127.0.0.1:0", ShutdownTimeout: time.Second, Profiling: enabled, Ready: func(a net.Addr) { addrs <- a }},
				http.NewServeMux(), prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		url := "http://" + (<-addrs).String()
		want := http.StatusNotFound
		if enabled {
			want = http.StatusOK
		}
		assert.Equal(t, want, get(url+"/debug/pprof/heap"), "profiling %t", enabled)
		cancel()
		require.NoError(t, <-served)
	}
}

// running serves app with opts until the test ends and returns the listener's address.
func running(t *testing.T, opts Options, app *http.ServeMux) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	opts.Addr, opts.ShutdownTimeout, opts.Ready = "127.0.0.1:0", time.Second, func(a net.Addr) { addrs <- a }
	go func() { served <- Run(ctx, opts, app, prometheus.NewRegistry(), slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() { cancel(); <-served })
	return (<-addrs).String()
}

// A caller that sends its body slowly is cut at ReadTimeout: the handler's read fails and the
// connection closes, instead of holding the handler (and what it set aside) for as long as the
// caller likes.
func TestRunCutsASlowBodyAtTheReadTimeout(t *testing.T) {
	readErr := make(chan error, 1)
	app := http.NewServeMux()
	app.HandleFunc("/hook", func(_ http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	addr := running(t, Options{ReadTimeout: 300 * time.Millisecond}, app)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = io.WriteString(conn, "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\":")
	require.NoError(t, err)
	// The rest of the body never comes.
	select {
	case err := <-readErr:
		require.Error(t, err, "the body's read fails")
		var netErr net.Error
		assert.ErrorAs(t, err, &netErr)
		assert.True(t, netErr.Timeout(), "a timeout: %v", err)
		assert.Less(t, time.Since(start), 2*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("the slow body was not cut")
	}
	// The server closes the connection.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = io.Copy(io.Discard, conn)
	assert.NoError(t, err, "closed by the server (EOF), not by our deadline")
}

// ReadTimeout bounds reading the request, not the handler: a handler that answers after it has
// passed (a function's sweep) is not cut, as long as WriteTimeout is unset.
func TestRunLetsAHandlerOutliveTheReadTimeout(t *testing.T) {
	app := http.NewServeMux()
	app.HandleFunc("/sweep", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
			http.Error(w, "canceled", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("done"))
	})
	addr := running(t, Options{ReadTimeout: 100 * time.Millisecond}, app)
	resp, err := http.Post("http://"+addr+"/sweep", "text/plain", strings.NewReader("tick"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "done", string(body))
}

// WriteTimeout cuts an answer that comes later: the webhook server sets one, since the
// kube-apiserver waits no longer than its webhook timeout anyway.
func TestRunCutsALateAnswerAtTheWriteTimeout(t *testing.T) {
	app := http.NewServeMux()
	app.HandleFunc("/hook", func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond)
		_, _ = w.Write([]byte("late"))
	})
	addr := running(t, Options{WriteTimeout: 100 * time.Millisecond}, app)
	resp, err := http.Post("http://"+addr+"/hook", "application/json", strings.NewReader("{}"))
	if err == nil {
		_ = resp.Body.Close()
	}
	assert.Error(t, err, "the late answer is not delivered")
}

// An idle kept-alive connection lasts IdleTimeout (by default longer than the callers' own 90 s),
// not ReadTimeout, which the standard library would take for it when unset: the caller, not the
// server, closes it.
func TestRunKeepsIdleConnectionsBeyondTheReadTimeout(t *testing.T) {
	app := http.NewServeMux()
	app.HandleFunc("/hook", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allowed")) })
	addr := running(t, Options{ReadTimeout: 100 * time.Millisecond}, app)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	reused := func() bool {
		t.Helper()
		var again bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { again = i.Reused }})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/hook", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return again
	}
	assert.False(t, reused(), "first request: a new connection")
	time.Sleep(400 * time.Millisecond)
	assert.True(t, reused(), "the idle connection outlived ReadTimeout")
}
