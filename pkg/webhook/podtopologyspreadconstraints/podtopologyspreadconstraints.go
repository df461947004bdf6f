// Package podtopologyspreadconstraints narrows the topology spread constraints of new pods of
// a Deployment to the pods of their own revision (GRM's pod-topology-spread-constraints
// webhook): it selects pod-template-hash in every constraint, as matchLabelKeys would on
// clusters where that is unavailable. Without it, a rolling update counts the old
// revision's pods and leaves the new ones imbalanced (kubernetes/kubernetes#98215).
package podtopologyspreadconstraints

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "pod-topology-spread-constraints"
	// Path is where Gardener serves it.
	Path = "/webhooks/pod-topology-spread-constraints"
)

// Webhook is the constructor the server registers.
var Webhook = webhook.Constructor{
	Name: Name,
	// Per tenant: where gardenlet enables it for the shoot (tenant.Settings); never for workerless shoots.
	AppliesTo: func(s *tenant.Settings) bool { return s.HasWorkers() && s.PodTopologySpreadConstraints },
	Enabled: func(c *componentconfig.ResourceManagerFile) bool {
		return c.Webhooks.PodTopologySpreadConstraints.Enabled
	},
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(), deps.Log), nil
	},
}

// Handler selects the pod's pod-template-hash in each of its topology spread constraints.
func Handler() admission.Handler {
	return webhook.Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(_ context.Context, _ admission.Request, pod *corev1.Pod) error {
		selectRevision(pod)
		return nil
	})
}

// selectRevision adds pod-template-hash=<the pod's> to the label selector of every constraint
// that does not select on pod-template-hash already, and drops pod-template-hash from its
// matchLabelKeys: the API server rejects a key that is in both.
func selectRevision(pod *corev1.Pod) {
	hash, ok := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if !ok {
		return
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		if selectsRevision(c.LabelSelector) {
			continue
		}
		if c.LabelSelector == nil {
			c.LabelSelector = &metav1.LabelSelector{}
		}
		if c.LabelSelector.MatchLabels == nil {
			c.LabelSelector.MatchLabels = map[string]string{}
		}
		c.LabelSelector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		c.MatchLabelKeys = slices.DeleteFunc(c.MatchLabelKeys, func(key string) bool { return key == appsv1.DefaultDeploymentUniqueLabelKey })
	}
}

// selectsRevision tells whether selector selects pods by pod-template-hash already (a label,
// or an In expression).
func selectsRevision(selector *metav1.LabelSelector) bool {
	if selector == nil {
		return false
	}
	if _, ok := selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		return true
	}
	return slices.ContainsFunc(selector.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool {
		return r.Key == appsv1.DefaultDeploymentUniqueLabelKey && r.Operator == metav1.LabelSelectorOpIn
	})
}
