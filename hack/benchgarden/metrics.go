package main

import (
	"context"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// counters are what one function counted so far of the events it was delivered.
type counters struct {
	// events are the watch events delivered (pings, the sweeps' ticks, left out); reconciled the
	// keys its reconcilers reconciled for them.
	events, reconciled float64
}

// delivered is what a function was delivered in the window and what it did with it.
type delivered struct{ events, reconciled float64 }

var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// scrapeAll reads every function's counters; a function that does not answer counts nothing.
func scrapeAll(ctx context.Context, urls map[string]string) map[string]counters {
	out := map[string]counters{}
	for name, url := range urls {
		if c, err := scrape(ctx, url); err == nil {
			out[name] = c
		}
	}
	return out
}

func scrape(ctx context.Context, url string) (counters, error) {
	var c counters
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return c, err
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return c, err
	}
	for _, m := range families["gardener_knative_events_total"].GetMetric() {
		if label(m, "type") != function.PingEventType {
			c.events += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["gardener_knative_reconcile_duration_seconds"].GetMetric() {
		if label(m, "trigger") == string(function.ByEvent) {
			c.reconciled += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func deliveredBetween(before, after map[string]counters) map[string]delivered {
	out := map[string]delivered{}
	for name, a := range after {
		b := before[name]
		if a.events < b.events { // restarted in between: its counters began anew
			b = counters{}
		}
		out[name] = delivered{events: a.events - b.events, reconciled: a.reconciled - b.reconciled}
	}
	return out
}
