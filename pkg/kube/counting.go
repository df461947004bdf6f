package kube

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
)

// RequestCounter counts API requests by verb, resource and response code, and the bytes of
// their responses by verb and resource.
type RequestCounter struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
}

// NewRequestCounter registers the request counter with the registerer.
func NewRequestCounter(reg prometheus.Registerer) *RequestCounter {
	c := &RequestCounter{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gardener_knative_api_requests_total",
		Help: "Requests sent to the kube-apiserver, by verb, resource and response code.",
	}, []string{"verb", "resource", "code"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardener_knative_api_response_bytes_total",
			Help: "Bytes of response bodies read from the kube-apiserver, by verb and resource.",
		}, []string{"verb", "resource"})}
	reg.MustRegister(c.requests, c.bytes)
	return c
}

// Instrument makes every request sent with cfg count.
func (c *RequestCounter) Instrument(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			code := "error"
			if err == nil {
				code = strconv.Itoa(resp.StatusCode)
			}
			verb, resource := Classify(req)
			c.requests.WithLabelValues(verb, resource, code).Inc()
			if err == nil && resp.Body != nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, counter: c.bytes.WithLabelValues(verb, resource)}
			}
			return resp, err
		})
	})
}

// Reset forgets every count so far.
func (c *RequestCounter) Reset() { c.requests.Reset(); c.bytes.Reset() }

// Bytes returns the response bytes read so far.
func (c *RequestCounter) Bytes() int64 {
	metrics := make(chan prometheus.Metric, 64)
	go func() { c.bytes.Collect(metrics); close(metrics) }()
	var total float64
	for m := range metrics {
		var pb dto.Metric
		if err := m.Write(&pb); err == nil {
			total += pb.GetCounter().GetValue()
		}
	}
	return int64(total)
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	counter prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.counter.Add(float64(n))
	return n, err
}

// Total returns how many requests were counted with the given verb ("" for any).
func (c *RequestCounter) Total(verb string) int { return c.Of(verb, "") }

// Of returns how many requests were counted with the given verb and resource (as Classify
// names it; "" for any).
func (c *RequestCounter) Of(verb, resource string) int {
	metrics := make(chan prometheus.Metric, 64)
	go func() { c.requests.Collect(metrics); close(metrics) }()
	total := 0
	for m := range metrics {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if (verb == "" || labels["verb"] == verb) && (resource == "" || labels["resource"] == resource) {
			total += int(pb.GetCounter().GetValue())
		}
	}
	return total
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Classify names a request by the Kubernetes API verb and the resource it addresses
// (group/resource, with /subresource), the way the kube-apiserver's own metrics do.
func Classify(req *http.Request) (verb, resource string) {
	parts, group, rest, ok := splitAPIPath(req)
	if !ok {
		return "discovery", req.URL.Path
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:] // namespaced resource
	}
	named := false
	switch len(rest) {
	case 0: // /api/v1, /apis/<group>/<version>: the REST mapper's discovery
		return "discovery", strings.Join(parts[:len(parts)-len(rest)], "/")
	case 1:
		resource = rest[0]
	default:
		resource, named = rest[0], true
		if len(rest) >= 3 {
			resource += "/" + rest[2]
		}
	}
	if group != "" {
		resource = group + "/" + resource
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case named:
			verb = "get"
		case req.URL.Query().Get("watch") == "true":
			verb = "watch"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}

// splitAPIPath splits a request's path into its parts, the API group ("" for the core group) and
// what follows the group's version (/api/v1/..., /apis/<group>/<version>/...); ok is false for
// shorter paths (discovery).
func splitAPIPath(req *http.Request) (parts []string, group string, rest []string, ok bool) {
	parts = strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		return parts, "", parts[2:], true
	case len(parts) >= 3 && parts[0] == "apis":
		return parts, parts[1], parts[3:], true
	}
	return parts, "", nil, false
}
