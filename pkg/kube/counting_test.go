package kube

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct{ method, url, verb, resource string }{
		{"GET", "/apis/operations.gardener.cloud/v1alpha1/namespaces/ns/bastions/b", "get", "operations.gardener.cloud/bastions"},
		{"GET", "/apis/operations.gardener.cloud/v1alpha1/bastions?limit=500", "list", "operations.gardener.cloud/bastions"},
		{"GET", "/apis/operations.gardener.cloud/v1alpha1/namespaces/ns/bastions?fieldSelector=x", "list", "operations.gardener.cloud/bastions"},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", "watch", "pods"},
		{"GET", "/api/v1/namespaces/ns", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"PUT", "/apis/core.gardener.cloud/v1beta1/namespaces/ns/shoots/s/status", "update", "core.gardener.cloud/shoots/status"},
		{"PATCH", "/api/v1/nodes/n", "patch", "nodes"},
		{"POST", "/api/v1/namespaces/ns/configmaps", "create", "configmaps"},
		{"DELETE", "/apis/operations.gardener.cloud/v1alpha1/namespaces/ns/bastions/b", "delete", "operations.gardener.cloud/bastions"},
		{"DELETE", "/apis/operations.gardener.cloud/v1alpha1/namespaces/ns/bastions", "deletecollection", "operations.gardener.cloud/bastions"},
		{"GET", "/apis/operations.gardener.cloud/v1alpha1", "discovery", "apis/operations.gardener.cloud/v1alpha1"},
		{"GET", "/api/v1", "discovery", "api/v1"},
		{"GET", "/apis", "discovery", "/apis"},
	} {
		u, _ := url.Parse(tc.url)
		verb, resource := Classify(&http.Request{Method: tc.method, URL: u})
		assert.Equal(t, tc.verb, verb, tc.url)
		assert.Equal(t, tc.resource, resource, tc.url)
	}
}
