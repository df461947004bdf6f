package webhook

import (
	"github.com/go-logr/logr"
)

// requestLogger is controller-runtime's per-request logger (admission.DefaultLogConstructor's
// values: object, namespace, name, resource, user, requestID) with those values attached only
// when a line is written. controller-runtime builds it twice for every request, and slog's
// handlers format attached values at once: 17% of the server's CPU per request went to
// formatting values that, on the path of an answered request, no line ever carries.
func requestLogger(base logr.Logger, values ...any) logr.Logger {
	sink := base.GetSink()
	if s, ok := sink.(logr.CallDepthLogSink); ok {
		// deferredValues' own frame: a line's source stays its caller's.
		sink = s.WithCallDepth(1)
	}
	return base.WithSink(deferredValues{sink: sink, values: values})
}

// deferredValues is a logr.LogSink that keeps values until a line is written.
type deferredValues struct {
	sink   logr.LogSink
	values []any
}

var _ logr.CallDepthLogSink = deferredValues{}

func (d deferredValues) Init(info logr.RuntimeInfo) { d.sink.Init(info) }

func (d deferredValues) Enabled(level int) bool { return d.sink.Enabled(level) }

func (d deferredValues) Info(level int, msg string, keysAndValues ...any) {
	d.sink.WithValues(d.values...).Info(level, msg, keysAndValues...)
}

func (d deferredValues) Error(err error, msg string, keysAndValues ...any) {
	d.sink.WithValues(d.values...).Error(err, msg, keysAndValues...)
}

func (d deferredValues) WithValues(keysAndValues ...any) logr.LogSink {
	return deferredValues{sink: d.sink, values: append(d.values[:len(d.values):len(d.values)], keysAndValues...)}
}

func (d deferredValues) WithName(name string) logr.LogSink {
	return deferredValues{sink: d.sink.WithName(name), values: d.values}
}

func (d deferredValues) WithCallDepth(depth int) logr.LogSink {
	if s, ok := d.sink.(logr.CallDepthLogSink); ok {
		return deferredValues{sink: s.WithCallDepth(depth), values: d.values}
	}
	return d
}
