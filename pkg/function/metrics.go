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
	// filtered counts events a watch's predicate dropped; terminal, events acknowledged after a
	// terminal failure; coalesced, ticks that arrived while their sweep ran (served by the next
	// run); keyFailures, keys a sweep could not reconcile.
	filtered    *prometheus.CounterVec
	terminal    *prometheus.CounterVec
	coalesced   *prometheus.CounterVec
	keyFailures *prometheus.CounterVec
	// guard counts the owner guard's checks and what they found (owner-kept, owner-lost,
	// check-failed, undo-failed).
	guard *prometheus.CounterVec
	// ownWrites counts events that were the echo of a successful reconcile's own write;
	// coalescedKeys, event keys served by a reconcile that began after the event arrived.
	ownWrites     *prometheus.CounterVec
	coalescedKeys *prometheus.CounterVec
	// shed counts events answered 429 at once, before any work, by reason (tenant-busy: per
	// seed, its tenant had TENANT_MAX_IN_FLIGHT events in flight); not in events.
	shed *prometheus.CounterVec
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
			Help:        "Duration of one key's reconcile, by reconciler, trigger (event or sweep) and result.",
			ConstLabels: constLabels,
			Buckets:     prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"reconciler", "trigger", "result"}),
		sweeps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "gardener_knative_sweep_duration_seconds",
			Help:        "Duration of a whole sweep, lists included, by sweep and result.",
			ConstLabels: constLabels,
			Buckets:     prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"sweep", "result"}),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_events_filtered_total",
			Help:        "Events a watch's predicate found irrelevant, by reconciler and kind.",
			ConstLabels: constLabels,
		}, []string{"reconciler", "kind"}),
		terminal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_events_terminal_total",
			Help:        "Events acknowledged after a terminal failure (Forbidden, Invalid, object gone), by kind; never retried.",
			ConstLabels: constLabels,
		}, []string{"kind"}),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_sweep_ticks_coalesced_total",
			Help:        "Ticks that arrived while their sweep was running and were served by the next run.",
			ConstLabels: constLabels,
		}, []string{"sweep"}),
		keyFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_sweep_key_failures_total",
			Help:        "Keys a sweep failed to reconcile, by sweep and kind of failure (transient, terminal); the next tick retries them.",
			ConstLabels: constLabels,
		}, []string{"sweep", "failure"}),
		guard: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_owner_guard_total",
			Help:        "Live checks of a reconcile's primary after it created objects, by reconciler and outcome (owner-kept; owner-lost: the creations undone and the key reconciled again; check-failed; undo-failed).",
			ConstLabels: constLabels,
		}, []string{"reconciler", "outcome"}),
		ownWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_events_own_writes_total",
			Help:        "Event keys not reconciled because the event carried the version of the object a successful reconcile of the same key wrote itself, by reconciler and kind of the object.",
			ConstLabels: constLabels,
		}, []string{"reconciler", "kind"}),
		coalescedKeys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_event_keys_coalesced_total",
			Help:        "Event keys not reconciled because a live reconcile of the same key that began after the event arrived succeeded while it waited (as a work queue holds a key once), by reconciler.",
			ConstLabels: constLabels,
		}, []string{"reconciler"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "gardener_knative_function_shed_total",
			Help:        "Events answered 429 with Retry-After at once, not handled (the sender retries them), by reason (tenant-busy: per seed, the event's tenant had TENANT_MAX_IN_FLIGHT events in flight). Not counted in gardener_knative_events_total.",
			ConstLabels: constLabels,
		}, []string{"reason"}),
		swept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        "gardener_knative_sweep_objects",
			Help:        "Objects the last run of each sweep reconciled.",
			ConstLabels: constLabels,
		}, []string{"sweep"}),
	}
	reg.MustRegister(m.events, m.reconcile, m.sweeps, m.swept, m.filtered, m.terminal, m.coalesced, m.keyFailures, m.guard, m.ownWrites, m.coalescedKeys, m.shed)
	return m
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}
