// Package agentreconciliationdelay is GRM's node agent reconciliation delay controller as a
// reconciler of the node function: it spreads the reconciliation delays of the target's
// gardener-node-agents evenly over [minDelay, maxDelay], by the index of each Node in the list of
// all Nodes sorted by name, in the annotation node-agent.gardener.cloud/reconciliation-delay.
// This file holds Gardener's rules as pure decisions.
package agentreconciliationdelay

import (
	"errors"
	"fmt"
	"sort"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation is the Node annotation the node agent reads its delay from.
const Annotation = v1beta1constants.AnnotationNodeAgentReconciliationDelay

// SecretSelector selects the node agents' Secrets in kube-system (one per worker pool).
const SecretSelector = v1beta1constants.GardenRole + "=" + v1beta1constants.GardenRoleOperatingSystemConfig

// Included are the names of the Nodes whose delay the controller spreads, sorted by name: all,
// except those of a worker pool whose node agent Secret asks for serial reconciliation (its
// annotation reconciliation.osc.node-agent.gardener.cloud/serial is "true"), which the node
// agents order among themselves.
func Included(nodes []metav1.PartialObjectMetadata, secrets []metav1.PartialObjectMetadata) []string {
	serial := map[string]bool{}
	for _, s := range secrets {
		if s.Annotations[v1beta1constants.AnnotationNodeAgentSerialOSCReconciliation] == "true" {
			serial[s.Name] = true
		}
	}
	var names []string
	for _, n := range nodes {
		if !serial[n.Labels[v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName]] {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Delays maps each of the sorted names to its annotation value: minDelay plus its index times an
// equal share of the range, in Go's duration notation. The arithmetic is Gardener's, operation
// for operation (float seconds, truncated to nanoseconds), so that the strings are the same.
func Delays(sorted []string, minDelay, maxDelay time.Duration) map[string]string {
	delays := make(map[string]string, len(sorted))
	for index, name := range sorted {
		rangeSize := (maxDelay.Seconds() - minDelay.Seconds()) / float64(len(sorted))
		delaySeconds := minDelay.Seconds() + float64(index)*rangeSize
		delays[name] = time.Duration(delaySeconds * float64(time.Second)).String()
	}
	return delays
}

// Validate is GRM's validation of the controller's configuration: a GRM whose delays are
// negative or whose minimum exceeds its maximum does not start, so it annotates nothing.
func Validate(minDelay, maxDelay time.Duration) error {
	var errs []error
	if minDelay.Seconds() < 0 {
		errs = append(errs, fmt.Errorf("minDelay %s must be non-negative", minDelay))
	}
	if maxDelay.Seconds() < 0 {
		errs = append(errs, fmt.Errorf("maxDelay %s must be non-negative", maxDelay))
	}
	if minDelay > maxDelay {
		errs = append(errs, fmt.Errorf("minDelay %s must not be higher than maxDelay %s", minDelay, maxDelay))
	}
	return errors.Join(errs...)
}
