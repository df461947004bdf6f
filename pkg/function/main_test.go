package function

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// blocking is a Reconciler that holds each key until released or its context ends.
type blocking struct {
	started chan struct{}
	release chan struct{}
}

func (b *blocking) Reconcile(ctx context.Context, _ client.Reader, _ Key) error {
	b.started <- struct{}{}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

const bastionRef = `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b","namespace":"ns"}`

func TestEventTimeoutAsksForARetry(t *testing.T) {
	rec := &blocking{started: make(chan struct{}, 1), release: make(chan struct{})}
	h := newHarness(t, &recorder{})
	h.server.reconciler = rec
	h.server.opts.EventTimeout = 50 * time.Millisecond
	code, body := h.send(t, event(t, RefAddEventType, bastionRef))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "context deadline exceeded")
}

func TestServeShutsDownGracefully(t *testing.T) {
	rec := &blocking{started: make(chan struct{}, 1), release: make(chan struct{})}
	h := newHarness(t, &recorder{})
	h.server.reconciler = rec

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := listener.Addr().String()
	require.NoError(t, listener.Close())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, addr, h.server, prometheus.NewRegistry(), 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	url := "http://" + addr
	require.Eventually(t, func() bool { return get(url+"/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, http.StatusOK, get(url+"/healthz"))
	assert.Equal(t, http.StatusOK, get(url+"/metrics"))

	// An event in flight when SIGTERM arrives is finished, not cut off.
	inFlight := make(chan int, 1)
	go func() {
		e := event(t, RefAddEventType, bastionRef)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(e.Data())))
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Id", "1")
		req.Header.Set("Ce-Source", "test")
		req.Header.Set("Ce-Type", RefAddEventType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			inFlight <- 0
			return
		}
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	<-rec.started
	cancel()
	require.Eventually(t, func() bool { return get(url+"/readyz") != http.StatusOK }, 5*time.Second, 5*time.Millisecond, "not ready once shutting down")
	close(rec.release)
	assert.Equal(t, http.StatusOK, <-inFlight)
	require.NoError(t, <-served)
	assert.Equal(t, 0, get(url+"/healthz"), "the listener is closed after shutdown")
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
