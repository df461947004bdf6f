// Package eventauth authenticates the sender of every event a function receives: Knative
// Eventing's OIDC sender identity (feature authentication-oidc). The Broker's filter delivers a
// Trigger's events with a token of the Trigger's OIDC ServiceAccount for the audience the Trigger's
// subscriber names; a function honours an event only with such a token, of its own audience, from
// one of the senders it is configured with. The token is checked by the cluster that issued it
// (a TokenReview against the cluster the function runs in, where Knative runs), so a token of a
// deleted Trigger or ServiceAccount is refused at once; a verified token is remembered until it
// expires, so a Broker that reuses its token (Knative's does, for most of its hour) costs one
// review per token.
//
// Refused requests are answered before the body is read: 401 without a valid token for the
// audience, 403 for a valid token of a sender that is not ours; both are final for Knative's
// dispatcher, which does not retry them. A review the cluster could not answer is a 503, which
// the Broker retries.
package eventauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/utils/clock"
)

// Policy is what a receiver of events checks, from its environment (config/ sets both for every
// function, derived from its Trigger: sources.EventAudience, sources.TriggerSender).
type Policy struct {
	// Audience is the audience a sender's token must be issued for: the one the function's Trigger
	// names for its subscriber. Empty turns authentication off (a landscape without Knative's OIDC).
	Audience string `envconfig:"EVENT_AUDIENCE"`
	// Senders are the identities (ServiceAccount user names) whose tokens are honoured: the OIDC
	// ServiceAccounts of the function's Triggers.
	Senders []string `envconfig:"EVENT_SENDERS"`
}

// Enabled says that senders are authenticated.
func (c Policy) Enabled() bool { return c.Audience != "" }

// Validate refuses an audience without senders: it would refuse every event.
func (c Policy) Validate() error {
	if c.Enabled() && len(c.Senders) == 0 {
		return fmt.Errorf("EVENT_AUDIENCE %q is set without EVENT_SENDERS: no event would be honoured", c.Audience)
	}
	return nil
}

// Reviewer asks the cluster that issued a token what it says of it (the TokenReview API).
type Reviewer func(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)

const (
	// maxRemembered bounds the verified tokens kept: the Broker's few live tokens fit many times.
	maxRemembered = 256
	// rememberAtMost re-checks a token this often even when it lives longer, so that a sender
	// removed from the cluster is refused within it.
	rememberAtMost = 10 * time.Minute
	// maxReviewsInFlight bounds the reviews one process asks at once: a caller that sends a new
	// token with every request cannot turn this process into a load on the kube-apiserver.
	maxReviewsInFlight = 4
	reviewTimeout      = 10 * time.Second
)

// Authenticator checks the senders of requests for one audience.
type Authenticator struct {
	config  Policy
	review  Reviewer
	clock   clock.PassiveClock
	reviews chan struct{}

	mu         sync.Mutex
	remembered map[[sha256.Size]byte]time.Time

	refusals *prometheus.CounterVec
	reviewed prometheus.Counter
}

// New returns the Authenticator of config, which reviews tokens with review; its counters are
// registered with reg.
func New(config Policy, review Reviewer, clk clock.PassiveClock, reg prometheus.Registerer) (*Authenticator, error) {
	if err := config.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{
		config: config, review: review, clock: clk,
		reviews:    make(chan struct{}, maxReviewsInFlight),
		remembered: map[[sha256.Size]byte]time.Time{},
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardener_knative_event_sender_refusals_total",
			Help: "Requests refused because their sender did not prove to be one of the function's Triggers, by reason (missing, invalid, sender, busy, unavailable).",
		}, []string{"reason"}),
		reviewed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gardener_knative_event_sender_reviews_total",
			Help: "TokenReviews asked to authenticate event senders (a token verified once is remembered until it expires).",
		}),
	}
	if reg != nil {
		if err := reg.Register(a.refusals); err != nil {
			return nil, err
		}
		if err := reg.Register(a.reviewed); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Wrap serves next only the requests whose sender the Authenticator accepts.
func (a *Authenticator) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refusal := a.check(req); refusal != nil {
			a.refusals.WithLabelValues(refusal.reason).Inc()
			if refusal.code == http.StatusServiceUnavailable || refusal.code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, refusal.message, refusal.code)
			return
		}
		next.ServeHTTP(w, req)
	})
}

type refusal struct {
	code            int
	reason, message string
}

func (a *Authenticator) check(req *http.Request) *refusal {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return &refusal{http.StatusUnauthorized, "missing", "event refused: no bearer token of a Trigger of this function (Knative's authentication-oidc)"}
	}
	key := sha256.Sum256([]byte(token))
	now := a.clock.Now()
	a.mu.Lock()
	until, known := a.remembered[key]
	a.mu.Unlock()
	if known && now.Before(until) {
		return nil
	}
	select {
	case a.reviews <- struct{}{}:
		defer func() { <-a.reviews }()
	default:
		return &refusal{http.StatusTooManyRequests, "busy", "event refused for now: too many sender tokens under review"}
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	a.reviewed.Inc()
	result, err := a.review(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{a.config.Audience}}})
	if err != nil {
		return &refusal{http.StatusServiceUnavailable, "unavailable", "the sender's token could not be reviewed: " + err.Error()}
	}
	status := result.Status
	if !status.Authenticated || !slices.Contains(status.Audiences, a.config.Audience) {
		reason := "the token is not valid for audience " + a.config.Audience
		if status.Error != "" {
			reason += ": " + status.Error
		}
		return &refusal{http.StatusUnauthorized, "invalid", "event refused: " + reason}
	}
	if !slices.Contains(a.config.Senders, status.User.Username) {
		return &refusal{http.StatusForbidden, "sender", fmt.Sprintf("event refused: %s is not a Trigger of this function", status.User.Username)}
	}
	a.remember(key, expiryOf(token, now))
	return nil
}

// remember keeps a verified token until it expires (at most rememberAtMost). When full, the
// expired ones go, and if none has expired, all: the next requests are reviewed again.
func (a *Authenticator) remember(key [sha256.Size]byte, until time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.remembered) >= maxRemembered {
		now := a.clock.Now()
		for k, t := range a.remembered {
			if !now.Before(t) {
				delete(a.remembered, k)
			}
		}
		if len(a.remembered) >= maxRemembered {
			clear(a.remembered)
		}
	}
	a.remembered[key] = until
}

// expiryOf is when a token the cluster has just verified expires (its exp claim), at most
// rememberAtMost from now; a token whose claims cannot be read is not remembered.
func expiryOf(token string, now time.Time) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return now
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return now
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return now
	}
	return minTime(time.Unix(claims.Exp, 0), now.Add(rememberAtMost))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// SinkTokenFile is where Knative's SinkBinding puts a source's OIDC token with
// authentication-oidc on (a ContainerSource's pods get it at /oidc/token, the Secret it keeps
// fresh, projected); without the feature there is no such file.
const SinkTokenFile = "/oidc/token"

// TokenFileTransport sends every request of next with the token file holds as its bearer: the
// sender side of Knative's OIDC for a ContainerSource, whose token Knative renews in the file. The
// file is read for every request, so a renewed token is used at once; no file, no token.
func TokenFileTransport(file string, next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		token, err := os.ReadFile(file)
		if err != nil || len(bytes.TrimSpace(token)) == 0 {
			return next.RoundTrip(req)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
		return next.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
