package networkpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// writers bounds the writes of one reconcile in flight at once (Gardener writes a Service's
// policies in parallel; a Service with many ports and namespaces has dozens).
const writers = 8

// ServiceReconciler keeps the NetworkPolicies of one Service.
type ServiceReconciler struct {
	Config   *Config
	Settings Settings
	Source   function.ClusterClient
	Events   function.EventRecorder
}

func newServiceReconciler(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	settings, err := NewSettings(cfg)
	if err != nil {
		return nil, err
	}
	return &ServiceReconciler{Config: cfg, Settings: settings, Source: deps.Source, Events: deps.Events}, nil
}

// Reconcile reads the Service, its namespace, the namespaces its selectors select and the
// Ingresses of its namespace, then creates, updates and deletes its policies as Decide says.
func (r *ServiceReconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Enabled {
		return nil
	}
	st, err := r.read(ctx, req)
	if err != nil {
		return err
	}
	existing, err := owned(ctx, req, req.Key)
	if err != nil {
		return err
	}
	desired, err := Decide(r.Settings, st)
	if errors.Is(err, errNamespaceNotFound) {
		return err // not yet in a cache of ours, or a race with its deletion: try again
	}
	if err != nil {
		return function.Terminal(err)
	}
	if err := r.write(ctx, st.Service, desired, existing); err != nil {
		return err
	}
	if desired.Err != nil {
		return function.Terminal(desired.Err)
	}
	return nil
}

// read gathers the State; it reads the namespaces and Ingresses only when the Service can have
// policies.
func (r *ServiceReconciler) read(ctx context.Context, req function.Request) (State, error) {
	st := State{Key: req.Key, Service: &corev1.Service{}}
	if err := req.Reader.Get(ctx, req.Key, st.Service); apierrors.IsNotFound(err) {
		st.Service = nil
		return st, nil
	} else if err != nil {
		return st, err
	}
	if st.Service.DeletionTimestamp != nil || st.Service.Spec.Selector == nil {
		return st, nil
	}
	st.Namespace = &metav1.PartialObjectMetadata{}
	st.Namespace.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: req.Key.Namespace}, st.Namespace); apierrors.IsNotFound(err) {
		st.Namespace = nil
		return st, nil
	} else if err != nil {
		return st, err
	}
	if !r.Settings.handles(st.Namespace.Labels) || st.Namespace.DeletionTimestamp != nil {
		return st, nil
	}
	selectors, err := NamespaceSelectors(st.Service)
	if err != nil {
		return st, function.Terminal(err)
	}
	for _, ls := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return st, function.Terminal(fmt.Errorf("failed parsing %s to labels.Selector: %w", ls.String(), err))
		}
		namespaces := &metav1.PartialObjectMetadataList{}
		namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
		if err := req.Reader.List(ctx, namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return st, fmt.Errorf("failed listing namespaces with selector %s: %w", sel, err)
		}
		st.Namespaces = append(st.Namespaces, namespaces.Items...)
	}
	if r.Settings.IngressController != nil {
		ingresses := &networkingv1.IngressList{}
		if err := req.Reader.List(ctx, ingresses, client.InNamespace(req.Key.Namespace)); err != nil {
			return st, fmt.Errorf("failed listing the Ingresses of namespace %s: %w", req.Key.Namespace, err)
		}
		st.Ingresses = ingresses.Items
	}
	return st, nil
}

// owned lists the policies that name the Service: by label on the API server, by the sweep's
// index in a sweep (its snapshot would otherwise match the labels of every policy it holds for
// every Service).
func owned(ctx context.Context, req function.Request, key function.Key) ([]networkingv1.NetworkPolicy, error) {
	policies := &networkingv1.NetworkPolicyList{}
	var opt client.ListOption = client.MatchingLabels(ownerLabels(key))
	if req.Trigger == function.BySweep {
		opt = client.MatchingFields{serviceIndex: key.String()}
	}
	if err := req.Reader.List(ctx, policies, opt); err != nil {
		return nil, fmt.Errorf("failed listing network policies for service %s: %w", key, err)
	}
	return policies.Items, nil
}

// write creates and updates the desired policies and deletes the stale ones, a few at a time.
func (r *ServiceReconciler) write(ctx context.Context, svc *corev1.Service, desired *Desired, existing []networkingv1.NetworkPolicy) error {
	byKey := make(map[client.ObjectKey]*networkingv1.NetworkPolicy, len(existing))
	for i := range existing {
		byKey[client.ObjectKeyFromObject(&existing[i])] = &existing[i]
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		slot = make(chan struct{}, writers)
	)
	run := func(do func() error) {
		wg.Add(1)
		slot <- struct{}{}
		go func() {
			defer func() { <-slot; wg.Done() }()
			if err := do(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for _, p := range desired.Policies {
		current := byKey[client.ObjectKeyFromObject(p)]
		run(func() error {
			written, err := r.ensure(ctx, current, p)
			if err == nil && written {
				r.warnShortened(ctx, svc, desired, p)
			}
			return err
		})
	}
	for _, p := range Stale(desired, existing) {
		run(func() error {
			if err := r.Source.Writer.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting NetworkPolicy %s: %w", client.ObjectKeyFromObject(p), err)
			}
			return nil
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ensure creates the policy, or updates current (as read) to it; it says whether it wrote.
func (r *ServiceReconciler) ensure(ctx context.Context, current, desired *networkingv1.NetworkPolicy) (bool, error) {
	key := client.ObjectKeyFromObject(desired)
	if current == nil {
		err := r.Source.Writer.Create(ctx, desired.DeepCopy())
		if !apierrors.IsAlreadyExists(err) {
			return err == nil, wrap(err, "creating", key)
		}
		// A policy of that name without the controller's labels (which the list selects by):
		// Gardener takes it over, and so does this.
		current = &networkingv1.NetworkPolicy{}
		if err := r.Source.Reader.Get(ctx, key, current); err != nil {
			return false, wrap(err, "reading", key)
		}
	}
	changed, err := r.Source.Writer.Patch(ctx, current, func() { Apply(current, desired) })
	return changed, wrap(err, "updating", key)
}

func wrap(err error, what string, key client.ObjectKey) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s NetworkPolicy %s: %w", what, key, err)
}

// warnShortened records Gardener's Warning on the Service when a policy it wrote selects pods by
// a shortened label key. Only when it wrote one: a reconcile that changes nothing writes nothing,
// not even an Event.
func (r *ServiceReconciler) warnShortened(ctx context.Context, svc *corev1.Service, desired *Desired, p *networkingv1.NetworkPolicy) {
	for usual, effective := range desired.Shortened {
		if selects(p, effective) {
			r.Events.Eventf(ctx, svc, corev1.EventTypeWarning, "PodLabelSelectorKey(s)TooLong",
				"Usual pod label selector has at least one key exceeding 63 characters and had to be mutated - consider shortening the namespace name or the service name (%s was mutated to %s)", usual, effective)
		}
	}
}

// selects says whether the policy uses the pod selector rendered as effective.
func selects(p *networkingv1.NetworkPolicy, effective string) bool {
	if fmt.Sprintf("%+v", p.Spec.PodSelector) == effective {
		return true
	}
	for _, rule := range p.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.PodSelector != nil && fmt.Sprintf("%+v", *peer.PodSelector) == effective {
				return true
			}
		}
	}
	return false
}

func ownerLabels(key function.Key) map[string]string {
	return map[string]string{
		resourcesv1alpha1.NetworkingServiceName:      key.Name,
		resourcesv1alpha1.NetworkingServiceNamespace: key.Namespace,
	}
}

// OrphanReconciler deletes an owned policy whose Service is gone.
type OrphanReconciler struct {
	Config *Config
	Source function.ClusterClient
}

func newOrphanReconciler(deps function.Deps) (function.Handler, error) {
	return &OrphanReconciler{Config: deps.Config.(*Config), Source: deps.Source}, nil
}

// Reconcile deletes the policy when its Service is gone: in the sweep's list and, since that
// list may be older than the policy, on the API server.
func (r *OrphanReconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Enabled {
		return nil
	}
	policy := &metav1.PartialObjectMetadata{}
	policy.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))
	if err := req.Reader.Get(ctx, req.Key, policy); err != nil {
		return err
	}
	key, ok := ServiceOf(policy.Labels)
	if !ok {
		return nil
	}
	svc := &metav1.PartialObjectMetadata{}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	for _, reader := range []client.Reader{req.Reader, r.Source.Reader} {
		if err := reader.Get(ctx, key, svc); !apierrors.IsNotFound(err) {
			return err
		}
	}
	return client.IgnoreNotFound(r.Source.Writer.Delete(ctx, policy))
}
