package function

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the function's Prometheus metrics; API requests are counted by kube.RequestCounter.
type metrics struct {
	events    *prometheus.CounterVec
	reconcile *prometheus.HistogramVec
	sweeps    *prometheus.HistogramVec
	swept     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer, function string) *metrics {
	constLabels := prometheus.Labels{"function": function}
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_events_total",
			Help:        "CloudEvents received, by type and outcome (done, rejected, retry, failed).",
			ConstLabels: constLabels,
		}, []string{"type", "outcome"}),
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "gardener_knative_reconcile_duration_seconds",
			Help:        "Duration of one key's reconcile, by trigger (event or sweep) and result.",
			ConstLabels: constLabels,
			Buckets:     prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"trigger", "result"}),
		sweeps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "gardener_knative_sweep_duration_seconds",
			Help:        "Duration of a whole sweep, lists included, by sweep and result.",
			ConstLabels: constLabels,
			Buckets:     prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"sweep", "result"}),
		swept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "gardener_knative_sweep_objects",
			Help:        "Objects the last run of each sweep reconciled.",
			ConstLabels: constLabels,
		}, []string{"sweep"}),
	}
	reg.MustRegister(m.events, m.reconcile, m.sweeps, m.swept)
	return m
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
