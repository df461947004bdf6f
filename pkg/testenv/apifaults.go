package testenv

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
)

// Fault is what APIFaults does to a request on its way to the kube-apiserver.
type Fault string

const (
	// Healthy passes every request.
	Healthy Fault = "healthy"
	// Throttled answers 429 Too Many Requests with Retry-After: 1, as API priority and fairness
	// does under load.
	Throttled Fault = "429"
	// Overloaded answers 503 Service Unavailable with Retry-After: 1.
	Overloaded Fault = "503"
	// Unreachable refuses the connection: the kube-apiserver is down or restarting.
	Unreachable Fault = "unreachable"
	// Hanging holds the request until its context ends: the caller's timeout decides.
	Hanging Fault = "timeout"
	// Flaky answers half of the requests 503 (seeded) and passes the others.
	Flaky Fault = "flaky"
	// LostAnswers passes every request, but the answer of a write is lost on its way back: the
	// kube-apiserver made the write, the client sees a broken connection.
	LostAnswers Fault = "lost-answers"
)

// APIFaults is a fault-injecting hop between a client and the kube-apiserver: WrapTransport
// goes into a rest.Config. It also records the writes the kube-apiserver accepted, so that a
// test can tell whether a write was made twice or only half.
type APIFaults struct {
	mu       sync.Mutex
	fault    Fault
	rand     *rand.Rand
	injected map[Fault]int
	accepted []Write
}

// Write is a write the kube-apiserver accepted.
type Write struct {
	Verb, Path string
	// Body is what was sent (a patch, or the object created).
	Body string
}

// NewAPIFaults starts healthy; Flaky draws from seed.
func NewAPIFaults(seed uint64) *APIFaults {
	return &APIFaults{fault: Healthy, rand: rand.New(rand.NewPCG(seed, seed)), injected: map[Fault]int{}}
}

// Set makes every following request meet fault.
func (f *APIFaults) Set(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// Injected is how many requests met fault.
func (f *APIFaults) Injected(fault Fault) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[fault]
}

// Accepted returns and forgets the writes the kube-apiserver accepted, in order.
func (f *APIFaults) Accepted() []Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	accepted := f.accepted
	f.accepted = nil
	return accepted
}

// WrapTransport is a rest.Config's WrapTransport.
func (f *APIFaults) WrapTransport(next http.RoundTripper) http.RoundTripper {
	return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		set, fault := f.fault, f.fault
		if fault == Flaky {
			if f.rand.IntN(2) == 0 {
				fault = Overloaded
			} else {
				fault = Healthy
			}
		}
		if fault != Healthy && (fault != LostAnswers || req.Method != http.MethodGet) {
			f.injected[set]++
		}
		f.mu.Unlock()

		switch fault {
		case Throttled:
			return answer(req, http.StatusTooManyRequests, "TooManyRequests"), nil
		case Overloaded:
			return answer(req, http.StatusServiceUnavailable, "ServiceUnavailable"), nil
		case Unreachable:
			return nil, fmt.Errorf("dial tcp %s: %w", req.URL.Host, syscall.ECONNREFUSED)
		case Hanging:
			<-req.Context().Done()
			return nil, req.Context().Err()
		}
		var body string
		if req.Method != http.MethodGet && req.GetBody != nil {
			if b, err := req.GetBody(); err == nil {
				read, _ := io.ReadAll(b)
				body = string(read)
			}
		}
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		if req.Method != http.MethodGet && resp.StatusCode < 300 {
			f.mu.Lock()
			f.accepted = append(f.accepted, Write{Verb: req.Method, Path: req.URL.Path, Body: body})
			f.mu.Unlock()
		}
		if fault == LostAnswers && req.Method != http.MethodGet {
			resp.Body.Close()
			return nil, fmt.Errorf("read tcp %s: %w", req.URL.Host, syscall.ECONNRESET)
		}
		return resp, nil
	})
}

// RoundTripperFunc is a function as an http.RoundTripper: a hop of a test's own between a client
// and the kube-apiserver (rest.Config.Wrap), as APIFaults is one.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

func (rt RoundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return rt(req) }

// answer is the kube-apiserver's Status answer with Retry-After: 1.
func answer(req *http.Request, code int, reason string) *http.Response {
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected: %s","reason":%q,"code":%d,"details":{"retryAfterSeconds":1}}`,
		strings.ToLower(reason), reason, code)
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
		Body:    io.NopCloser(bytes.NewBufferString(body)),
		Request: req, ContentLength: int64(len(body)),
	}
}
