package function

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ClusterClient is what a reconciler gets for one cluster: an uncached reader for what it must
// read live (its Request's reader already is one for events), and the optimistic Writer.
type ClusterClient struct {
	Reader client.Reader
	Writer Writer
}

// Deps are what the runtime hands a reconciler's constructor.
type Deps struct {
	// Source is the function's own cluster; Target is set only for functions that declare it.
	Source ClusterClient
	Target ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
	// Events records Kubernetes Events on the Source cluster, as Gardener's controllers do.
	Events EventRecorder
	// Config is the function's Config, loaded; nil when the function declares none.
	Config any
}

// EventRecorder records core/v1 Events about an object, the way Gardener's controllers emit
// them (reason, message, Normal or Warning, reported by "<controller>-controller").
type EventRecorder interface {
	Event(ctx context.Context, obj client.Object, eventType, reason, message string)
	Eventf(ctx context.Context, obj client.Object, eventType, reason, format string, args ...any)
}

// NewEventRecorder records Events with c, reported by component. A failure to record is logged,
// never returned: Events are information, and losing one must not fail a reconcile.
func NewEventRecorder(c client.Client, component string, clk clock.PassiveClock, log *slog.Logger) EventRecorder {
	return &eventRecorder{c: c, component: component, clock: clk, log: log}
}

type eventRecorder struct {
	c         client.Client
	component string
	clock     clock.PassiveClock
	log       *slog.Logger
}

func (r *eventRecorder) Eventf(ctx context.Context, obj client.Object, eventType, reason, format string, args ...any) {
	r.Event(ctx, obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *eventRecorder) Event(ctx context.Context, obj client.Object, eventType, reason, message string) {
	ref, err := reference(obj, r.c.Scheme())
	if err != nil {
		r.log.Warn("cannot record event", "reason", reason, "error", err)
		return
	}
	now := metav1.NewTime(r.clock.Now())
	namespace := obj.GetNamespace()
	if namespace == "" {
		namespace = metav1.NamespaceDefault // where client-go's recorder puts events of cluster-scoped objects
	}
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// client-go's recorder names events "<object>.<unix nanos in hex>". The name takes
			// the wall clock, not the injected one: a fake clock that stands still would give
			// two Events the same name.
			Name:      fmt.Sprintf("%v.%x", obj.GetName(), time.Now().UnixNano()),
			Namespace: namespace,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: r.component},
		ReportingController: r.component,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.c.Create(ctx, event); err != nil {
		r.log.Warn("cannot record event", "object", client.ObjectKeyFromObject(obj), "reason", reason, "error", err)
	}
}

func reference(obj client.Object, scheme *runtime.Scheme) (corev1.ObjectReference, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return corev1.ObjectReference{}, err
	}
	return corev1.ObjectReference{
		APIVersion:      gvk.GroupVersion().String(),
		Kind:            gvk.Kind,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		UID:             obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(),
	}, nil
}
