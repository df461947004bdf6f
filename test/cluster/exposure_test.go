package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var kingressGVK = schema.GroupVersionKind{Group: "networking.internal.knative.dev", Version: "v1alpha1", Kind: "IngressList"}

// servedThrough waits until the ingress entry addr serves host: GET /healthz answered 200.
func servedThrough(t *testing.T, addr, host string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, host+" served on "+addr, func() error {
		code, err := getThrough(addr, host)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("HTTP %d", code)
		}
		return err
	})
}

// getThrough sends GET /healthz (every binary of ours serves it) to the ingress entry addr for host.
func getThrough(addr, host string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Nothing of ours is reachable from outside the cluster (docs/deployment.md): the ingress's public
// entry (CLUSTER_INGRESS_PUBLIC, what a load balancer exposes; Traefik serves Knative's public
// routes there and its cluster-local ones only on the private entries) refuses every host name of
// every Knative Service in gardener-knative, on the landscape's external domain and the cluster's,
// and Knative gave none of them a public rule. Two controls show the refusals are the routes'
// doing: a public Knative Service (dead-letter's image, in default) is served on the public entry,
// and grm-webhooks, by the same host name, on the private one.
func TestNothingReachableFromOutside(t *testing.T) {
	ctx := context.Background()
	public, private := os.Getenv("CLUSTER_INGRESS_PUBLIC"), os.Getenv("CLUSTER_INGRESS")
	require.NotEmpty(t, public, "CLUSTER_INGRESS_PUBLIC (hack/cluster.sh env)")

	deadLetter := &unstructured.Unstructured{}
	deadLetter.SetGroupVersionKind(ksvcGVK)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "dead-letter"}, deadLetter))
	containers, _, _ := unstructured.NestedSlice(deadLetter.Object, "spec", "template", "spec", "containers")
	require.NotEmpty(t, containers)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "public-probe", "namespace": "default"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"image": containers[0].(map[string]any)["image"]}}}}},
	}}
	probe.SetGroupVersionKind(ksvcGVK)
	require.NoError(t, c.Create(ctx, probe))
	t.Cleanup(func() { _ = c.Delete(context.Background(), probe) })
	// Its URL is on the landscape's external domain (hack/cluster.sh sets config-domain).
	var probeHost string
	eventually(t, 2*time.Minute, "the public probe's URL", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), probe); err != nil {
			return err
		}
		u, _, _ := unstructured.NestedString(probe.Object, "status", "url")
		parsed, err := url.Parse(u)
		if err != nil || parsed.Host == "" {
			return fmt.Errorf("no URL yet (%q)", u)
		}
		probeHost = parsed.Host
		return nil
	})
	externalDomain := strings.TrimPrefix(probeHost, "public-probe.default.")
	require.NotEqual(t, "svc.cluster.local", externalDomain, "the cluster has no external domain: Knative makes every route cluster-local")
	servedThrough(t, public, probeHost, 3*time.Minute)
	servedThrough(t, private, "grm-webhooks."+namespace+".svc.cluster.local", time.Minute)

	services := ourServices(t)
	refused := 0
	for _, s := range services {
		name := s.GetName() + "." + s.GetNamespace()
		for _, host := range []string{name + "." + externalDomain, name + ".svc.cluster.local", name + ".svc", name} {
			code, err := getThrough(public, host)
			require.NoError(t, err, host)
			require.Equal(t, http.StatusNotFound, code, "%s answered on the ingress's public entry", host)
			refused++
		}
	}

	var ingressItems []unstructured.Unstructured
	for _, ns := range ourNamespaces {
		ingresses := &unstructured.UnstructuredList{}
		ingresses.SetGroupVersionKind(kingressGVK)
		require.NoError(t, c.List(ctx, ingresses, client.InNamespace(ns)))
		ingressItems = append(ingressItems, ingresses.Items...)
	}
	require.Len(t, ingressItems, len(services), "one Knative Ingress per Service")
	for _, ing := range ingressItems {
		rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		require.NotEmpty(t, rules, "Knative Ingress %s", ing.GetName())
		for _, r := range rules {
			require.Equal(t, "ClusterLocal", r.(map[string]any)["visibility"], "Knative Ingress %s has a public rule", ing.GetName())
		}
	}
	t.Logf("%d host names of %d Services refused on the public entry; the public probe served there", refused, len(services))
}
