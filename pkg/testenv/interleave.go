package testenv

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Create is the first create a test interleaves another reconcile with (Interleave): a POST to a
// collection whose path ends in /<Resource>, whose body names Name (any, when empty).
type Create struct {
	Resource, Name string
	// Before runs before the create is sent (the create is held until it returns), After once
	// it is answered; either may be nil.
	Before, After func()

	once sync.Once
	done bool
}

// Done says the create was sent.
func (c *Create) Done() bool { return c.done }

// Interleave returns a rest.Config change (for a function's client) that runs c's hooks around
// the first matching create it sends: deterministic interleavings of two reconciles, e.g. a
// deletion completed while a create is held.
func Interleave(c *Create) func(*rest.Config) {
	return func(cfg *rest.Config) {
		cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/"+c.Resource) || req.Body == nil {
					return next.RoundTrip(req)
				}
				body, err := io.ReadAll(req.Body)
				if err != nil {
					return nil, err
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
				if c.Name != "" && !bytes.Contains(body, []byte(`"name":"`+c.Name+`"`)) {
					return next.RoundTrip(req)
				}
				var resp *http.Response
				first := false
				c.once.Do(func() {
					first = true
					if c.Before != nil {
						c.Before()
					}
					resp, err = next.RoundTrip(req)
					c.done = true
					if c.After != nil {
						c.After()
					}
				})
				if !first {
					return next.RoundTrip(req)
				}
				return resp, err
			})
		})
	}
}
