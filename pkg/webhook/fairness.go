package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/serve"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Fairness bounds what each tenant, and all of them together, may hold of a webhook server, so
// that one tenant's kube-apiserver (many large AdmissionReviews, slow bodies) can neither starve
// the others nor push the pod over its memory limit: every other tenant's fail-closed webhooks
// would reject then. A request over a bound is answered at once, its body unread, with 429 Too
// Many Requests and Retry-After (docs/webhooks.md#fairness-between-tenants). Zero values take the
// defaults below.
type Fairness struct {
	// MaxRequestBytes bounds a request's body (default 7Mi); a longer one is refused with 413.
	MaxRequestBytes byteSize `envconfig:"MAX_REQUEST_BYTES"`
	// TenantMaxInFlight bounds the requests of one tenant (the seed's unprefixed paths are one
	// tenant too) that are served at once (default 16).
	TenantMaxInFlight int `envconfig:"TENANT_MAX_IN_FLIGHT"`
	// TenantMaxBytesInFlight bounds the body bytes of one tenant's requests in flight (default
	// 8Mi); at least MaxRequestBytes and a request's overhead, so that the largest review fits.
	TenantMaxBytesInFlight byteSize `envconfig:"TENANT_MAX_BYTES_IN_FLIGHT"`
	// MaxBytesInFlight bounds the body bytes of all requests in flight (default 16Mi): what keeps
	// the server under its memory limit whatever the load. Its last quarter is kept for tenants
	// that hold little (modestBytes) or nothing: however many tenants flood, the others' requests
	// find room.
	MaxBytesInFlight byteSize `envconfig:"MAX_BYTES_IN_FLIGHT"`
	// ReadTimeout, WriteTimeout and IdleTimeout: see serve.Options (defaults 5s, 30s, 2m).
	ReadTimeout  time.Duration `envconfig:"READ_TIMEOUT"`
	WriteTimeout time.Duration `envconfig:"WRITE_TIMEOUT"`
	IdleTimeout  time.Duration `envconfig:"IDLE_TIMEOUT"`
}

const (
	// DefaultMaxRequestBytes is what controller-runtime's admission webhook reads at most (its
	// maxRequestSize, 7 MiB; it refuses longer reviews anyway): the kube-apiserver takes request
	// bodies of up to 3 MiB, and an UPDATE's AdmissionReview carries the object and the old
	// object besides its own fields. Anything shorter could refuse a review the kube-apiserver
	// legitimately sends; anything longer no handler reads.
	DefaultMaxRequestBytes = 7 << 20
	// DefaultTenantMaxInFlight: a webhook answers in milliseconds (cached reads; at most
	// REQUEST_TIMEOUT), so by Little's law even thousands of a tenant's admissions a second hold
	// a handful at once. 16 leaves headroom for slow reads from a tenant's kube-apiserver and
	// lets four tenants saturated at once fill containerConcurrency (64) before Knative's
	// queue-proxy queues the others.
	DefaultTenantMaxInFlight = 16
	// DefaultTenantMaxBytesInFlight: the largest review with its overhead, and then some.
	DefaultTenantMaxBytesInFlight = 8 << 20
	// DefaultMaxBytesInFlight: a review is held about three times while it is decoded (the body,
	// the review's raw object and old object, the typed objects), and with GOGC 400 its garbage
	// piles up to the 100 MiB GOMEMLIMIT of config/seed/grm-webhooks.yaml before a collection.
	// Measured (docs/webhooks.md#fairness-between-tenants, TestFloodFromOneTenantLeavesOthersServed
	// standalone): with three tenants flooding ~3 MiB reviews, 24 MiB peaked at 121 MiB RSS,
	// too near the pods' 128 MiB; 16 MiB at 74–111 MiB (five tenants: 89–123 MiB, the live heap
	// never above 18 MiB). Unbounded, one tenant took the server to 213 MiB.
	DefaultMaxBytesInFlight = 16 << 20
	// DefaultReadTimeout: a body of a few MiB arrives in milliseconds inside a cluster; a slow
	// body holds its tenant's share no longer than that.
	DefaultReadTimeout = 5 * time.Second
	// DefaultWriteTimeout: the kube-apiserver waits at most 30 s for a webhook (its maximum
	// timeoutSeconds); the answer is no use after that.
	DefaultWriteTimeout = 30 * time.Second

	// modestBytes: a tenant that holds no more than that, this request included (some 25
	// ordinary reviews with their overhead), or nothing before it (one large review), may use
	// the last quarter of MaxBytesInFlight.
	modestBytes = 1 << 20
	// requestOverhead is what a request costs besides its body (its goroutine, buffers, the
	// decoded review's small parts, the response), charged with the body, so that a flood of
	// small requests from many tenants is bounded by MaxBytesInFlight too.
	requestOverhead = 32 << 10
	// retryAfterSeconds is the Retry-After of a shed request. The kube-apiserver's webhook
	// client (client-go's rest client) retries a 429 that has one after that long, up to ten
	// times within the webhook's timeout: a short overload delays the request instead of failing
	// it.
	retryAfterSeconds = 1
)

// withDefaults fills the zero values.
func (f Fairness) withDefaults() Fairness {
	if f.MaxRequestBytes == 0 {
		f.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if f.TenantMaxInFlight == 0 {
		f.TenantMaxInFlight = DefaultTenantMaxInFlight
	}
	if f.TenantMaxBytesInFlight == 0 {
		f.TenantMaxBytesInFlight = DefaultTenantMaxBytesInFlight
	}
	if f.MaxBytesInFlight == 0 {
		f.MaxBytesInFlight = DefaultMaxBytesInFlight
	}
	if f.ReadTimeout == 0 {
		f.ReadTimeout = DefaultReadTimeout
	}
	if f.WriteTimeout == 0 {
		f.WriteTimeout = DefaultWriteTimeout
	}
	if f.IdleTimeout == 0 {
		f.IdleTimeout = serve.DefaultIdleTimeout
	}
	return f
}

// check tells whether the bounds let the largest request through and an answer out in time.
func (f Fairness) check(requestTimeout time.Duration) error {
	f = f.withDefaults()
	var errs []error
	if f.MaxRequestBytes < 0 || f.TenantMaxInFlight < 0 || f.TenantMaxBytesInFlight < 0 || f.MaxBytesInFlight < 0 ||
		f.ReadTimeout < 0 || f.WriteTimeout < 0 || f.IdleTimeout < 0 {
		errs = append(errs, errors.New("fairness bounds and timeouts must not be negative"))
	}
	if largest := f.MaxRequestBytes + requestOverhead; f.TenantMaxBytesInFlight < largest || f.MaxBytesInFlight-f.MaxBytesInFlight/4 < f.TenantMaxBytesInFlight {
		errs = append(errs, fmt.Errorf("¾ of MAX_BYTES_IN_FLIGHT (%d) ≥ TENANT_MAX_BYTES_IN_FLIGHT (%d) ≥ MAX_REQUEST_BYTES (%d) + %d needed: else the largest request is never served",
			f.MaxBytesInFlight, f.TenantMaxBytesInFlight, f.MaxRequestBytes, requestOverhead))
	}
	if f.WriteTimeout < f.ReadTimeout+requestTimeout {
		errs = append(errs, fmt.Errorf("WRITE_TIMEOUT (%s) must cover READ_TIMEOUT (%s) and REQUEST_TIMEOUT (%s): else an answer in time is cut", f.WriteTimeout, f.ReadTimeout, requestTimeout))
	}
	return errors.Join(errs...)
}

// serveOptions sets the timeouts of a webhook server's serve.Options.
func (f Fairness) serveOptions(opts serve.Options) serve.Options {
	f = f.withDefaults()
	opts.ReadTimeout, opts.WriteTimeout, opts.IdleTimeout = f.ReadTimeout, f.WriteTimeout, f.IdleTimeout
	return opts
}

// byteSize is a number of bytes, given as a quantity ("7Mi", "8388608").
type byteSize int64

// Decode reads a quantity (envconfig.Decoder).
func (b *byteSize) Decode(value string) error {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return err
	}
	n, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("%q is no whole number of bytes", value)
	}
	*b = byteSize(n)
	return nil
}

// Shed reasons, the label of gardener_knative_webhook_shed_total.
const (
	shedTenantRequests = "tenant-requests"
	shedTenantBytes    = "tenant-bytes"
	shedBytes          = "bytes"
	shedTooLarge       = "too-large"
)

// fairShare admits a request when its tenant and the server have room for it, and sheds it
// otherwise. A tenant's entry lives while it has requests in flight: the map is bounded by
// them, not by the tenants ever seen.
type fairShare struct {
	limits Fairness
	shed   map[string]prometheus.Counter

	mu      sync.Mutex
	bytes   int64
	tenants map[tenant.Name]*tenantLoad
}

type tenantLoad struct {
	requests int
	bytes    int64
}

func newFairShare(limits Fairness, metrics *serverMetrics) *fairShare {
	f := &fairShare{limits: limits.withDefaults(), tenants: map[tenant.Name]*tenantLoad{}, shed: map[string]prometheus.Counter{}}
	for _, reason := range []string{shedTenantRequests, shedTenantBytes, shedBytes, shedTooLarge} {
		f.shed[reason] = metrics.shed.WithLabelValues(reason)
	}
	return f
}

// Serve calls next when key's tenant and the server have room for r, else answers 429 without
// reading r's body (413 for a body longer than MaxRequestBytes); what r holds is released when
// next returns. A nil fairShare calls next.
func (f *fairShare) Serve(w http.ResponseWriter, r *http.Request, key tenant.Name, next http.Handler) {
	if f == nil {
		next.ServeHTTP(w, r)
		return
	}
	limit := int64(f.limits.MaxRequestBytes)
	if r.ContentLength > limit {
		f.shed[shedTooLarge].Inc()
		answerStatus(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
			fmt.Sprintf("the request's body of %d bytes exceeds the webhook server's %d (MAX_REQUEST_BYTES)", r.ContentLength, limit), 0)
		return
	}
	// A body of unknown length may be as long as the limit.
	cost := r.ContentLength
	if cost < 0 {
		cost = limit
	}
	cost += requestOverhead
	if reason, message := f.admit(key, cost); reason != "" {
		f.shed[reason].Inc()
		answerStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, message, retryAfterSeconds)
		return
	}
	defer f.release(key, cost)
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	next.ServeHTTP(w, r)
}

// admit reserves cost for key, or tells why not.
func (f *fairShare) admit(key tenant.Name, cost int64) (reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	load := f.tenants[key]
	if load == nil {
		load = &tenantLoad{}
	}
	who := "tenant " + strconv.Quote(string(key))
	if key == "" {
		who = "the seed"
	}
	switch {
	case load.requests >= f.limits.TenantMaxInFlight:
		return shedTenantRequests, fmt.Sprintf("webhook server busy: %s has %d requests in flight (TENANT_MAX_IN_FLIGHT); retry later", who, load.requests)
	case load.bytes+cost > int64(f.limits.TenantMaxBytesInFlight):
		return shedTenantBytes, fmt.Sprintf("webhook server busy: %s has %d bytes of requests in flight, this one would take %d more (TENANT_MAX_BYTES_IN_FLIGHT %d); retry later",
			who, load.bytes, cost, f.limits.TenantMaxBytesInFlight)
	case f.bytes+cost > f.roomFor(load.bytes, cost):
		return shedBytes, fmt.Sprintf("webhook server busy: %d bytes of requests in flight, %s's would take %d more (MAX_BYTES_IN_FLIGHT %d); retry later",
			f.bytes, who, cost, f.limits.MaxBytesInFlight)
	}
	load.requests++
	load.bytes += cost
	f.bytes += cost
	f.tenants[key] = load
	return "", ""
}

// roomFor is how many bytes all tenants may hold for a request of cost from a tenant that
// holds held: all of MaxBytesInFlight for a tenant holding little or nothing, three quarters for
// the others, so that tenants flooding together cannot take the room the others need.
func (f *fairShare) roomFor(held, cost int64) int64 {
	all := int64(f.limits.MaxBytesInFlight)
	if held == 0 || held+cost <= modestBytes {
		return all
	}
	return all - all/4
}

func (f *fairShare) release(key tenant.Name, cost int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bytes -= cost
	load := f.tenants[key]
	load.requests--
	load.bytes -= cost
	if load.requests == 0 {
		delete(f.tenants, key)
	}
}

// answerStatus answers code with a Status whose reason and message say why, as the kube-apiserver
// reports a webhook's failed call; retryAfter, when set, is the Retry-After header and the
// Status's retryAfterSeconds.
func answerStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string, retryAfter int32) {
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter)))
		status.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfter}
	}
	out, err := json.Marshal(status)
	if err != nil {
		http.Error(w, message, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(out)
}
