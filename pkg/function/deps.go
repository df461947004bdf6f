package function

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ClusterClient is what a reconciler gets for one cluster: an uncached reader for what it must
// read live (its Request's reader already is one for events), and the optimistic Writer.
//
// On the Target cluster of a function deployed per seed, Reader, Writer and Mapper act on the
// cluster of the tenant the runtime put into the reconcile's context (tenant.From): a reconciler
// written for one target serves every tenant unchanged, and cannot reach another tenant's.
type ClusterClient struct {
	Reader client.Reader
	Writer Writer
	// Mapper maps kinds to resources on the cluster the context's tenant is on (a tenant's own
	// CRDs included), e.g. to tell a manifest's namespaced kinds from cluster-scoped ones.
	Mapper func(ctx context.Context) (meta.RESTMapper, error)
	// Config is the cluster's REST configuration (counted like the client), for clients the
	// runtime does not build, such as Helm's; set for the Target cluster in single-target and
	// seed mode.
	Config *rest.Config
	// RESTConfig is the REST configuration of the cluster the context's tenant is on (per
	// seed, the tenant's: its server and CA), e.g. for the CA bundle a token requestor hands
	// out; nil where unknown.
	RESTConfig func(ctx context.Context) (*rest.Config, error)
	// Tokens issues and reviews ServiceAccount tokens on the cluster: TokenRequests and
	// TokenReviews store nothing, so they are not the Writer's.
	Tokens Tokens
}

// Tokens issues and reviews ServiceAccount tokens.
type Tokens interface {
	// Request fills tr's status with a token of sa (the TokenRequest API).
	Request(ctx context.Context, sa *corev1.ServiceAccount, tr *authenticationv1.TokenRequest) error
	// Review fills tr's status with what the cluster says of its token (the TokenReview API).
	Review(ctx context.Context, tr *authenticationv1.TokenReview) error
}

// NewTokens returns the token requests and reviews of c's cluster.
func NewTokens(c client.Client) Tokens { return clientTokens{c: c} }

type clientTokens struct{ c client.Client }

func (t clientTokens) Request(ctx context.Context, sa *corev1.ServiceAccount, tr *authenticationv1.TokenRequest) error {
	return t.c.SubResource("token").Create(ctx, sa, tr)
}

func (t clientTokens) Review(ctx context.Context, tr *authenticationv1.TokenReview) error {
	return t.c.Create(ctx, tr)
}

// Deps are what the runtime hands a reconciler's constructor.
type Deps struct {
	// Source is the function's own cluster; Target is set only for functions that declare it
	// (in per-seed mode, it acts on the tenant of the reconcile's context).
	Source ClusterClient
	Target ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
	// Events records Kubernetes Events on the cluster of the reconciler's kind (For), beside the
	// objects they are about, as Gardener's controllers do.
	Events EventRecorder
	// Config is the function's Config, loaded; nil when the function declares none.
	Config any
	// Registry registers a reconciler's own metrics beside the runtime's (served on /metrics);
	// nil when the process serves none.
	Registry prometheus.Registerer
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
	return &eventRecorder{c: c, writer: NewWriter(c), component: component, clock: clk, log: log}
}

type eventRecorder struct {
	c         client.Client
	writer    Writer
	component string
	clock     clock.PassiveClock
	log       *slog.Logger
	// counting serialises the counting of one Event within the process (reconciles of a sweep
	// meet the same situation at once): striped by the Event's name, so it stays bounded.
	counting [64]sync.Mutex
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
	// Like client-go's correlator, a repeated Event (same object, type, reason and message) is
	// not recorded anew but counted on the first: its name is derived from what makes it the
	// same, so a sweep that meets the same blocked deletion every run does not pile up Events.
	key := fnv.New64a()
	for _, part := range []string{string(obj.GetUID()), namespace, obj.GetName(), r.component, eventType, reason, message} {
		_, _ = key.Write([]byte(part))
		_, _ = key.Write([]byte{0})
	}
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%v.%016x", obj.GetName(), key.Sum64()),
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
	err = r.c.Create(ctx, event)
	if apierrors.IsAlreadyExists(err) {
		lock := &r.counting[key.Sum64()%uint64(len(r.counting))]
		lock.Lock()
		err = r.count(ctx, client.ObjectKeyFromObject(event), now)
		lock.Unlock()
	}
	if err != nil {
		r.log.Warn("cannot record event", "object", client.ObjectKeyFromObject(obj), "reason", reason, "error", err)
	}
}

// count adds one occurrence to an existing Event. Within the process, counts of one Event are
// serialised; a repeat counted at once by another process (another replica) conflicts, and the
// loser reads again and counts on the winner, with client-go's backoff for conflicts, so that no
// occurrence is lost.
func (r *eventRecorder) count(ctx context.Context, key client.ObjectKey, now metav1.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing := &corev1.Event{}
		if err := r.c.Get(ctx, key, existing); err != nil {
			return err
		}
		_, err := r.writer.Patch(ctx, existing, func() {
			existing.Count++
			existing.LastTimestamp = now
		})
		return err
	})
}

// EventsRBAC is the rule a function that records Events needs: create them, and read and count
// a repeated one.
var EventsRBAC = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "get", "patch"}}

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
