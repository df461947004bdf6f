package localsources

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/eventing/pkg/eventfilter"
	"knative.dev/eventing/pkg/eventfilter/subscriptionsapi"
	"knative.dev/eventing/pkg/kncloudevents"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

// Broker stands in for a Knative Broker on one machine: it accepts the sources' events, and
// delivers each to every Trigger whose filters pass it (Knative's own subscriptionsapi filters),
// with the Trigger's delivery policy, or the Broker's where the Trigger has none (as Knative's
// Trigger reconciler chooses): retries with Knative's own backoff on the codes its dispatcher
// retries, then the dead letter (here: a log line and a count).
type Broker struct {
	routes []route
	log    *zap.SugaredLogger
	client *http.Client
	wg     sync.WaitGroup
	// Tokens, when set, authenticate every delivery as Knative's filter does with
	// authentication-oidc on: the Trigger's token for its subscriber's audience.
	Tokens *TriggerTokens
	// DeadLettered counts events that exhausted their retries.
	DeadLettered atomic.Int64
	inFlight     atomic.Int64
}

type route struct {
	trigger *eventingv1.Trigger
	filter  eventfilter.Filter
	sink    string
	retry   kncloudevents.RetryConfig
	// timeout bounds one attempt: the delivery's timeout, else the subscriber's own bound.
	timeout time.Duration
}

// NewBroker routes by the triggers of broker to the sinks of their subscribers (Knative Service
// name → URL).
func NewBroker(broker *eventingv1.Broker, triggers []*eventingv1.Trigger, sinks map[string]string, log *zap.SugaredLogger) (*Broker, error) {
	b := &Broker{log: log, client: &http.Client{}}
	for _, t := range triggers {
		sink, ok := sinks[t.Spec.Subscriber.Ref.Name]
		if !ok {
			return nil, fmt.Errorf("trigger %s: no sink for %s", t.Name, t.Spec.Subscriber.Ref.Name)
		}
		delivery := t.Spec.Delivery
		if delivery == nil && broker != nil {
			delivery = broker.Spec.Delivery
		}
		retry := kncloudevents.NoRetries()
		if delivery != nil {
			var err error
			if retry, err = kncloudevents.RetryConfigFromDeliverySpec(*delivery); err != nil {
				return nil, fmt.Errorf("trigger %s: %w", t.Name, err)
			}
		}
		timeout := retry.RequestTimeout
		if timeout == 0 {
			// Knative's dispatcher sets no bound of its own: a request waits for a slot of the
			// subscriber's pods until its queue-proxy ends it at the Service's timeoutSeconds.
			timeout = configgen.FunctionTimeout
		}
		b.routes = append(b.routes, route{trigger: t, filter: subscriptionsapi.CreateSubscriptionsAPIFilters(log.Desugar(), t.Spec.Filters), sink: sink, retry: retry, timeout: timeout})
	}
	return b, nil
}

// Serve listens on a loopback port with ingress (the Broker itself, or a FaultRelay in front
// of it) and returns its URL and a stop function that waits for deliveries in flight.
func (b *Broker) Serve(ingress http.Handler) (string, func() error, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	server := &http.Server{Handler: ingress, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	return "http://" + listener.Addr().String(), func() error {
		err := server.Close()
		b.wg.Wait()
		return err
	}, nil
}

// ServeHTTP ingests one event, as Knative's broker ingress does: 202 once accepted, delivery
// happens asynchronously per Trigger.
func (b *Broker) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	event, ok := ingest(w, req)
	if !ok {
		return
	}
	for _, r := range b.routes {
		if r.filter.Filter(req.Context(), *event) == eventfilter.FailFilter { // as Knative: no filter passes
			continue
		}
		b.wg.Add(1)
		b.inFlight.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.inFlight.Add(-1)
			b.deliver(r, *event)
		}()
	}
	w.WriteHeader(http.StatusAccepted)
}

func (b *Broker) deliver(r route, event cloudevents.Event) {
	var lastErr error
	for attempt := 0; attempt <= r.retry.RetryMax; attempt++ {
		if attempt > 0 {
			time.Sleep(r.retry.Backoff(attempt-1, nil))
		}
		code, err := b.send(r, event)
		if err == nil && code >= 200 && code < 300 {
			return
		}
		lastErr = err
		if err == nil {
			lastErr = fmt.Errorf("HTTP %d", code)
			if !retriable(code) {
				break
			}
		}
	}
	b.DeadLettered.Add(1)
	b.log.Warnw("dead-lettered", "trigger", r.trigger.Name, "type", event.Type(), "subject", event.Subject(), "error", lastErr)
}

// ingest reads the event of a request to the Broker's ingress; what is no valid CloudEvent gets
// a 400 (final for the sender), as Knative's ingress answers.
func ingest(w http.ResponseWriter, req *http.Request) (*cloudevents.Event, bool) {
	event, err := binding.ToEvent(req.Context(), cehttp.NewMessageFromHttpRequest(req))
	if err == nil {
		err = event.Validate()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return event, true
}

// InFlight are the deliveries under way, retries included.
func (b *Broker) InFlight() int64 { return b.inFlight.Load() }

// retriable are the answers Knative's dispatcher retries: 404, 408, 409, 429 and every 5xx.
func retriable(code int) bool {
	return code == 404 || code == 408 || code == 409 || code == 429 || code >= 500
}

func (b *Broker) send(r route, event cloudevents.Event) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.sink, nil)
	if err != nil {
		return 0, err
	}
	if b.Tokens != nil {
		token, err := b.Tokens.Token(ctx, r.trigger)
		if err != nil {
			return 0, fmt.Errorf("the token of trigger %s: %w", r.trigger.Name, err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	if err := cehttp.WriteRequest(ctx, binding.ToMessage(&event), req); err != nil {
		return 0, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
