package landscape

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
)

// The sample chart the landscape's OCI registry serves: one ConfigMap <release>-config showing
// the values gardenlet injects (ocitest.ConfigMapChart).
const (
	SampleChartName    = "sample-extension"
	SampleChartVersion = "0.1.0"
)

// StartChartRegistry serves an OCI registry at address (host:port; a free port with port 0),
// with the sample chart pushed by Helm's registry client, and returns it with the chart's
// reference. The landscape's is on loopback; the one-node cluster's suite serves it on the pod
// bridge's address, which pods reach and go-containerregistry speaks plain HTTP to (a private
// range).
func StartChartRegistry(address string) (*ocitest.Registry, string, error) {
	registry, err := ocitest.StartAt(address, "", "")
	if err != nil {
		return nil, "", fmt.Errorf("OCI registry: %w", err)
	}
	archive, err := ocitest.ConfigMapChart(SampleChartName, SampleChartVersion)
	if err != nil {
		registry.Close()
		return nil, "", err
	}
	ref, _, err := registry.Push(archive, SampleChartName, SampleChartVersion)
	if err != nil {
		registry.Close()
		return nil, "", fmt.Errorf("OCI registry at %s: %w", registry.Host, err)
	}
	return registry, ref, nil
}

// finalizeNamespacesInterval is how often the seed's terminating namespaces are looked at.
const finalizeNamespacesInterval = 500 * time.Millisecond

// finalizeNamespaces stands in for kube-controller-manager's namespace controller on the seed,
// which envtest does not run: without it a deleted namespace stays Terminating forever, and so
// would every ControllerInstallation whose deletion waits for its namespace. It releases the
// "kubernetes" finalizer of each namespace being deleted. It does not delete what the namespace
// still holds, as the real controller would first: the functions remove their objects before
// they delete a namespace (the controllerinstallation function uninstalls the release).
func finalizeNamespaces(ctx context.Context, cluster kubernetes.Interface) {
	ticker := time.NewTicker(finalizeNamespacesInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		terminating := metav1.ListOptions{FieldSelector: "status.phase=" + string(corev1.NamespaceTerminating)}
		namespaces, err := cluster.CoreV1().Namespaces().List(ctx, terminating)
		if err != nil {
			continue // the seed is stopping, or busy: the next tick tries again
		}
		for i := range namespaces.Items {
			ns := &namespaces.Items[i]
			if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
				continue
			}
			ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
			_, _ = cluster.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}) // a conflict is retried on the next tick
		}
	}
}
