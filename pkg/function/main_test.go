package function

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hanging is a Reconciler that waits for its context to end, like one stuck on the API.
type hanging struct{}

func (hanging) Reconcile(ctx context.Context, _ client.Reader, _ Key) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestEventTimeoutAsksForARetry(t *testing.T) {
	h := newHarness(t, &recorder{})
	h.server.reconciler = hanging{}
	h.server.opts.EventTimeout = 50 * time.Millisecond
	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b","namespace":"ns"}`))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "context deadline exceeded")
}
