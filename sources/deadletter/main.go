// Command dead-letter is the Broker's dead-letter sink: every event that a Trigger could not
// deliver after its retries ends here, is logged with the reason Knative attached, and counted
// in gardener_knative_dead_letters_total, so operators see (and can alert on) what the
// functions never handled. The functions' sweeps converge what these events would have done.
package main

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { bootstrap.Main("dead-letter sink", run) }

func run(ctx context.Context) error {
	var cfg bootstrap.Config
	process, err := bootstrap.Start(&cfg, "component", "dead-letter")
	if err != nil {
		return err
	}
	deadLetters := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gardener_knative_dead_letters_total",
		Help: "Events the Broker could not deliver after its retries, by event type, kind and the HTTP code of the last attempt.",
	}, []string{"type", "kind", "code"})
	process.Registry.MustRegister(deadLetters)
	return process.Serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		event, err := binding.ToEvent(req.Context(), cehttp.NewMessageFromHttpRequest(req))
		if err != nil {
			http.Error(w, "not a CloudEvent: "+err.Error(), http.StatusBadRequest)
			return
		}
		ext := event.Extensions()
		// Knative's dispatcher adds the failed delivery's answer as these extensions.
		code, _ := ext["knativeerrorcode"].(string)
		kind, _ := ext["kind"].(string)
		deadLetters.WithLabelValues(metricType(event.Type()), kind, code).Inc()
		process.Log.Warn("event dead-lettered: the Broker gave up delivering it",
			"id", event.ID(), "type", event.Type(), "source", event.Source(), "subject", event.Subject(),
			"kind", kind, "code", code, "destination", ext["knativeerrordest"], "response", ext["knativeerrordata"])
		w.WriteHeader(http.StatusAccepted)
	}), bootstrap.ServeOptions{})
}

// metricType keeps the label bounded: only the types the sources send are named.
func metricType(t string) string {
	switch t {
	case function.PingEventType, function.ResourceAddEventType, function.ResourceUpdateEventType, function.ResourceDeleteEventType,
		function.RefAddEventType, function.RefUpdateEventType, function.RefDeleteEventType:
		return t
	}
	return "other"
}
