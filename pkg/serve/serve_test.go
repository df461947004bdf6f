package serve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
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
