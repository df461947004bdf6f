// Package highavailabilityconfig makes Deployments, StatefulSets and HorizontalPodAutoscalers
// highly available as their Namespace asks (GRM's high-availability-config webhook): replicas
// by component type and failure tolerance type, zone pinning, topology spread constraints over
// nodes and zones, and tolerations for taint-based evictions.
package highavailabilityconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "high-availability-config"
	// Path is where Gardener serves it.
	Path = "/webhooks/high-availability-config"
)

// DefaultCacheTTL is how long a Namespace's policy, a namespace's HPAs and the node count are
// reused (see Config.CacheTTL).
const DefaultCacheTTL = time.Second

// cacheSize bounds each of the three caches: namespaces (of all tenants) that workloads are
// admitted in within one TTL.
const cacheSize = 4096

// Config is the webhook's configuration besides the component configuration.
type Config struct {
	// CacheTTL is how long the reads are reused; 0 reads the API server for every request.
	// A Namespace annotation changed less than this before an object is admitted may not
	// apply to it yet (see docs/webhooks/high-availability-config.md).
	CacheTTL time.Duration `envconfig:"HIGH_AVAILABILITY_CONFIG_CACHE_TTL" default:"1s"`
}

// configured is the webhook with its settings (HIGH_AVAILABILITY_CONFIG_CACHE_TTL).
var configured = webhook.Configured[Config]{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool {
		return c.Webhooks.HighAvailabilityConfig.Enabled
	},
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		h, err := Handler(deps.Target, deps.Config.Webhooks.HighAvailabilityConfig, deps.Clock, cfg.CacheTTL, deps.Log)
		if err != nil {
			return webhook.Webhook{}, err
		}
		return webhook.Admission(Name, Path, h, deps.Log), nil
	},
}

// Webhook is the constructor the server registers. It reads Namespaces, HPAs and Nodes of the
// target cluster, the one whose objects it admits, reused for
// HIGH_AVAILABILITY_CONFIG_CACHE_TTL.
var Webhook = configured.Constructor()

// WithCacheTTL is Webhook with a fixed cache TTL instead of the environment's.
func WithCacheTTL(ttl time.Duration) webhook.Constructor {
	return configured.With(Config{CacheTTL: ttl})
}

var (
	deploymentKind  = schema.GroupKind{Group: appsv1.GroupName, Kind: "Deployment"}
	statefulSetKind = schema.GroupKind{Group: appsv1.GroupName, Kind: "StatefulSet"}
	hpaKind         = schema.GroupKind{Group: autoscalingv2.GroupName, Kind: "HorizontalPodAutoscaler"}
)

// Handler mutates the objects it is sent; target reads the admitted cluster, its reads are
// reused for cacheTTL (as told by clk; 0 reads every time, a negative TTL is an error), cfg
// gives the toleration seconds (nil adds no toleration).
func Handler(target client.Reader, cfg rmv1alpha1.HighAvailabilityConfigWebhookConfig, clk clock.PassiveClock, cacheTTL time.Duration, log *slog.Logger) (admission.Handler, error) {
	h := &handler{target: target, cfg: cfg, log: log}
	var err error
	if h.policies, err = cache.New(cache.Options[policy]{TTL: cacheTTL, Size: cacheSize, Clock: clk}); err != nil {
		return nil, fmt.Errorf("namespace cache: %w", err)
	}
	if h.scalers, err = cache.New(cache.Options[[]scaler]{TTL: cacheTTL, Size: cacheSize, Clock: clk}); err != nil {
		return nil, fmt.Errorf("HPA cache: %w", err)
	}
	if h.multipleNodes, err = cache.New(cache.Options[bool]{TTL: cacheTTL, Size: cacheSize, Clock: clk}); err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	return h, nil
}

type handler struct {
	target client.Reader
	cfg    rmv1alpha1.HighAvailabilityConfigWebhookConfig
	log    *slog.Logger
	// policies by namespace, scalers by namespace, multipleNodes under "": per tenant.
	policies      *cache.Cache[policy]
	scalers       *cache.Cache[[]scaler]
	multipleNodes *cache.Cache[bool]
}

// scaler is what the webhook needs of an HPA: what it scales, and up to how many replicas.
type scaler struct {
	apiVersion, kind, name string
	maxReplicas            int32
}

func (h *handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	var (
		obj    client.Object
		mutate func(policy) error
	)
	switch (schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}) {
	case deploymentKind:
		d := &appsv1.Deployment{}
		obj, mutate = d, func(p policy) error {
			// Pods of a Deployment carry the labels of its template; pod-template-hash (in
			// matchLabelKeys) narrows each constraint to the pods of one revision.
			return h.mutateWorkload(ctx, req, p, workload{
				obj: d, replicas: &d.Spec.Replicas, template: &d.Spec.Template,
				spreadSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(d.Spec.Template.Labels)}, perRevision: true,
			})
		}
	case statefulSetKind:
		s := &appsv1.StatefulSet{}
		obj, mutate = s, func(p policy) error {
			// The selector is immutable, so it keeps selecting the pods not yet updated when
			// the template's labels change (see gardener/etcd-druid#899).
			return h.mutateWorkload(ctx, req, p, workload{
				obj: s, replicas: &s.Spec.Replicas, template: &s.Spec.Template, spreadSelector: s.Spec.Selector.DeepCopy(),
			})
		}
	case hpaKind:
		a := &autoscalingv2.HorizontalPodAutoscaler{}
		obj, mutate = a, func(p policy) error { return h.mutateHPA(req, p, a) }
	default:
		return admission.Allowed("not a Deployment, StatefulSet or HorizontalPodAutoscaler")
	}
	decoded, err := webhook.Decode(req, obj)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	p, err := h.policy(ctx, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := mutate(p); err != nil {
		if errors.As(err, &invalidError{}) {
			return admission.Denied(err.Error())
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return webhook.Patch(req, decoded, obj)
}

// invalidError is a problem of the admitted object itself: it is denied, not errored.
type invalidError struct{ error }

// policy is what the object's Namespace asks for, by its annotations.
type policy struct {
	// failureToleranceType is nil without the annotation; its empty value is meaningful
	// (no failure tolerance), so nil and "" differ.
	failureToleranceType *gardencorev1beta1.FailureToleranceType
	// zones are the distinct non-empty entries of the comma-separated zones annotation, sorted.
	zones []string
	// zonePinning pins pods to the zones even without a failure tolerance type.
	zonePinning bool
}

// policy reads the Namespace's policy, reused for the cache TTL.
func (h *handler) policy(ctx context.Context, namespace string) (policy, error) {
	return h.policies.Get(ctx, namespace, func(ctx context.Context) (policy, error) { return h.readPolicy(ctx, namespace) })
}

func (h *handler) readPolicy(ctx context.Context, namespace string) (policy, error) {
	ns := &corev1.Namespace{}
	if err := h.target.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return policy{}, fmt.Errorf("reading namespace %q: %w", namespace, err)
	}
	var p policy
	if v, ok := ns.Annotations[resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType]; ok {
		p.failureToleranceType = new(gardencorev1beta1.FailureToleranceType(v))
	}
	if v := ns.Annotations[resourcesv1alpha1.HighAvailabilityConfigZones]; v != "" {
		zones := slices.DeleteFunc(strings.Split(v, ","), func(z string) bool { return z == "" })
		slices.Sort(zones)
		p.zones = slices.Compact(zones)
	}
	p.zonePinning, _ = strconv.ParseBool(ns.Annotations[resourcesv1alpha1.HighAvailabilityConfigZonePinning])
	return p, nil
}

// workload is what the webhook mutates of a Deployment or a StatefulSet.
type workload struct {
	obj      client.Object
	replicas **int32
	template *corev1.PodTemplateSpec
	// spreadSelector selects the workload's pods in its topology spread constraints; nil
	// (a StatefulSet without selector, which validation rejects) adds none.
	spreadSelector *metav1.LabelSelector
	// perRevision spreads the pods of each revision on their own (Deployments).
	perRevision bool
}

func (h *handler) mutateWorkload(ctx context.Context, req admission.Request, p policy, w workload) error {
	replicas, err := replicaCount(w.obj, *w.replicas, p.failureToleranceType)
	if err != nil {
		return err
	}
	scaled, maxReplicas, err := h.horizontalScaling(ctx, req)
	if err != nil {
		return err
	}
	multipleNodes, err := h.hasMultipleNodes(ctx)
	if err != nil {
		return err
	}
	// An HPA owns the replicas once it scaled above the computed count.
	if replicas != nil && (!scaled || ptr.Deref(*w.replicas, 0) < *replicas) {
		h.log.Info("Mutating replicas", "kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "replicas", *replicas)
		*w.replicas = replicas
	}
	pinZones(w.template, p)
	spread(w, p, scaled, maxReplicas, multipleNodes)
	h.tolerateTaintBasedEvictions(w.template)
	return nil
}

// horizontalScaling tells whether an HPA in the namespace scales the admitted object, and its
// maxReplicas.
func (h *handler) horizontalScaling(ctx context.Context, req admission.Request) (bool, int32, error) {
	scalers, err := h.scalers.Get(ctx, req.Namespace, func(ctx context.Context) ([]scaler, error) {
		hpas := &autoscalingv2.HorizontalPodAutoscalerList{}
		if err := h.target.List(ctx, hpas, client.InNamespace(req.Namespace)); err != nil {
			return nil, fmt.Errorf("listing HPAs: %w", err)
		}
		scalers := make([]scaler, 0, len(hpas.Items))
		for _, hpa := range hpas.Items {
			ref := hpa.Spec.ScaleTargetRef
			scalers = append(scalers, scaler{apiVersion: ref.APIVersion, kind: ref.Kind, name: ref.Name, maxReplicas: hpa.Spec.MaxReplicas})
		}
		return scalers, nil
	})
	if err != nil {
		return false, 0, err
	}
	apiVersion := schema.GroupVersion{Group: req.Kind.Group, Version: req.Kind.Version}.String()
	for _, s := range scalers {
		if s.apiVersion == apiVersion && s.kind == req.Kind.Kind && s.name == req.Name {
			return true, s.maxReplicas, nil
		}
	}
	return false, 0, nil
}

// hasMultipleNodes tells whether the cluster has more than one Node: on a single node,
// enforcing a spread over hosts would leave every replica but one pending.
func (h *handler) hasMultipleNodes(ctx context.Context) (bool, error) {
	return h.multipleNodes.Get(ctx, "", func(ctx context.Context) (bool, error) {
		nodes := &metav1.PartialObjectMetadataList{}
		nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		if err := h.target.List(ctx, nodes, client.Limit(2)); err != nil {
			return false, fmt.Errorf("listing nodes: %w", err)
		}
		return len(nodes.Items) > 1, nil
	})
}
