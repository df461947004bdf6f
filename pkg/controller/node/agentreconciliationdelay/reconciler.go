package agentreconciliationdelay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Key is the one key of a target: all its Nodes are decided together (Gardener enqueues one
// anonymous request), and the key names the target's kube-system Namespace, where the node
// agents' Secrets are, so that a sweep over the target has exactly one key to reconcile.
var Key = function.Key{Name: metav1.NamespaceSystem}

// patchConcurrency bounds the Node patches in flight: a new Node shifts the delays of every
// Node, and Gardener patches them in parallel too.
const patchConcurrency = 10

// Reconciler annotates every Node of one target with its delay.
type Reconciler struct {
	// MinDelay and MaxDelay are the configured range; per seed, the maximum is the tenant's
	// (its Shoot's annotation, as gardenlet configures the shoot's GRM).
	MinDelay, MaxDelay time.Duration
	Target             function.ClusterClient
	Log                *slog.Logger
}

// Reconcile lists the target's Nodes and node agent Secrets (metadata only), and patches each
// Node whose annotation is not its delay.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	maxDelay, err := r.maxDelay(ctx)
	if err != nil {
		return err
	}
	if err := Validate(r.MinDelay, maxDelay); err != nil {
		return function.Terminal(fmt.Errorf("GRM would refuse this configuration: %w", err))
	}
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := req.Reader.List(ctx, nodes); err != nil {
		return fmt.Errorf("failed listing nodes: %w", err)
	}
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := req.Reader.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{v1beta1constants.GardenRole: v1beta1constants.GardenRoleOperatingSystemConfig}); err != nil {
		return fmt.Errorf("failed to list gardener-node-agent secrets: %w", err)
	}
	delays := Delays(Included(nodes.Items, secrets.Items), r.MinDelay, maxDelay)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(patchConcurrency)
	for i := range nodes.Items {
		node := &nodes.Items[i]
		delay, ok := delays[node.Name]
		if !ok || node.Annotations[Annotation] == delay {
			continue
		}
		node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		g.Go(func() error {
			// Conditional on the version listed: a Node changed since is a conflict, and the
			// runtime decides again from a fresh list.
			_, err := r.Target.Writer.Patch(gctx, node, func() { metav1.SetMetaDataAnnotation(&node.ObjectMeta, Annotation, delay) })
			return err
		})
	}
	return g.Wait()
}

// maxDelay is the configured maximum, or per seed the one gardenlet derives from the tenant's
// Shoot (its settings).
func (r *Reconciler) maxDelay(ctx context.Context) (time.Duration, error) {
	settings, ok := tenant.SettingsFrom(ctx)
	if !ok {
		return r.MaxDelay, nil
	}
	if settings.NodeAgentMaxDelayError != nil {
		return 0, function.Terminal(fmt.Errorf("tenant %s: %w", tenant.From(ctx), settings.NodeAgentMaxDelayError))
	}
	return settings.NodeAgentMaxDelay, nil
}
