package crddeletionprotection

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

// kinds are the protected custom resources by their resource, as the tests address them.
var kinds = map[string]schema.GroupVersionKind{
	"backupbuckets":            extensionKind("BackupBucket"),
	"backupentries":            extensionKind("BackupEntry"),
	"containerruntimes":        extensionKind("ContainerRuntime"),
	"controlplanes":            extensionKind("ControlPlane"),
	"dnsrecords":               extensionKind("DNSRecord"),
	"extensions":               extensionKind("Extension"),
	"infrastructures":          extensionKind("Infrastructure"),
	"networks":                 extensionKind("Network"),
	"operatingsystemconfigs":   extensionKind("OperatingSystemConfig"),
	"selfhostedshootexposures": extensionKind("SelfHostedShootExposure"),
	"workers":                  extensionKind("Worker"),
	"etcds":                    {Group: "druid.gardener.cloud", Version: "v1alpha1", Kind: "Etcd"},
}

func extensionKind(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "extensions.gardener.cloud", Version: "v1alpha1", Kind: kind}
}

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func object(gvk schema.GroupVersionKind, namespace, name string, labels, annotations map[string]string) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, Annotations: annotations}}
	obj.SetGroupVersionKind(gvk)
	return obj
}

func confirmation(value string) map[string]string {
	return map[string]string{ConfirmationAnnotation: value}
}

var protectedLabel = map[string]string{ProtectedLabel: "true"}

// deleteRequest is the request of a DELETE of obj, at the given resource.
func deleteRequest(t testing.TB, resource string, obj *metav1.PartialObjectMetadata) admission.Request {
	t.Helper()
	req := webhooktest.Request(t, admissionv1.Delete, nil, obj)
	gvk := obj.GroupVersionKind()
	req.Resource = metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource}
	return req
}

// collectionRequest is what the kube-apiserver sends for each object of a DELETECOLLECTION: no
// name, the object as the old object.
func collectionRequest(t testing.TB, resource string, obj *metav1.PartialObjectMetadata) admission.Request {
	t.Helper()
	req := deleteRequest(t, resource, obj)
	req.Name = ""
	return req
}

// reader serves List from a fixed list (or fails with err) and records what was asked.
type reader struct {
	items []metav1.PartialObjectMetadata
	err   error

	lists   int
	listGVK schema.GroupVersionKind
	opts    client.ListOptions
}

func (r *reader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("unexpected GET")
}

func (r *reader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	r.listGVK = list.GetObjectKind().GroupVersionKind()
	r.opts = client.ListOptions{}
	r.opts.ApplyOptions(opts)
	if r.err != nil {
		return r.err
	}
	l, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("unexpected list type %T", list)
	}
	l.Items = append([]metav1.PartialObjectMetadata(nil), r.items...)
	return nil
}

func handle(h admission.Handler, req admission.Request) admission.Response {
	return h.Handle(context.Background(), req)
}

func assertDenied(t *testing.T, resp admission.Response, msg string) {
	t.Helper()
	assert.False(t, resp.Allowed)
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusForbidden, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, msg)
}

func TestOtherOperationsPass(t *testing.T) {
	r := &reader{}
	obj := object(kinds["workers"], "shoot--a--b", "w", nil, nil)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Connect} {
		req := deleteRequest(t, "workers", obj)
		req.Operation = op
		assert.True(t, handle(Handler(r), req).Allowed, op)
	}
	assert.Zero(t, r.lists)
}

func TestOtherResourcesPass(t *testing.T) {
	r := &reader{}
	for _, gvr := range []metav1.GroupVersionResource{
		{Version: "v1", Resource: "pods"},
		{Group: "extensions.gardener.cloud", Version: "v1alpha1", Resource: "clusters"},
		// Gardener registers bastions, but does not protect them.
		{Group: "extensions.gardener.cloud", Version: "v1alpha1", Resource: "bastions"},
		{Group: "druid.gardener.cloud", Version: "v1alpha1", Resource: "etcdcopybackupstasks"},
	} {
		req := deleteRequest(t, "x", object(schema.GroupVersionKind{Group: gvr.Group, Version: gvr.Version, Kind: "X"}, "ns", "x", nil, nil))
		req.Resource = gvr
		resp := handle(Handler(r), req)
		assert.True(t, resp.Allowed, gvr)
		assert.Equal(t, "resource is not deletion-protected", resp.Result.Message)
		collection := req
		collection.Name = ""
		assert.True(t, handle(Handler(r), collection).Allowed, gvr)
	}
	assert.Zero(t, r.lists)
}

func TestEveryProtectedKindNeedsConfirmation(t *testing.T) {
	for resource, gvk := range kinds {
		t.Run(resource, func(t *testing.T) {
			h := Handler(&reader{err: errors.New("a single DELETE must not read the cluster")})
			for _, annotations := range []map[string]string{nil, {"other": "true"}, confirmation("false"), confirmation("yes"), confirmation("")} {
				resp := handle(h, deleteRequest(t, resource, object(gvk, "shoot--a--b", "x", nil, annotations)))
				assertDenied(t, resp, `must have a "confirmation.gardener.cloud/deletion" annotation to delete`)
			}
			for _, value := range []string{"true", "True", "TRUE", "t", "1"} {
				resp := handle(h, deleteRequest(t, resource, object(gvk, "shoot--a--b", "x", nil, confirmation(value))))
				assert.True(t, resp.Allowed, value)
			}
		})
	}
}

func TestProtectedCRDsNeedConfirmation(t *testing.T) {
	h := Handler(&reader{err: errors.New("a single DELETE must not read the cluster")})
	for _, version := range []string{"v1", "v1beta1"} {
		gvk := crdKind
		gvk.Version = version
		resource := "customresourcedefinitions"

		resp := handle(h, deleteRequest(t, resource, object(gvk, "", "workers.extensions.gardener.cloud", protectedLabel, nil)))
		assertDenied(t, resp, "annotation to delete")

		resp = handle(h, deleteRequest(t, resource, object(gvk, "", "workers.extensions.gardener.cloud", protectedLabel, confirmation("true"))))
		assert.True(t, resp.Allowed)

		for _, labels := range []map[string]string{nil, {ProtectedLabel: "false"}} {
			resp = handle(h, deleteRequest(t, resource, object(gvk, "", "widgets.example.com", labels, nil)))
			assert.True(t, resp.Allowed, "unprotected CRD %v", labels)
		}
	}
}

func TestCollectionNeedsEveryObjectConfirmed(t *testing.T) {
	gvk := kinds["infrastructures"]
	confirmedInfra := object(gvk, "shoot--a--b", "confirmed", nil, confirmation("true"))
	unconfirmedInfra := object(gvk, "shoot--a--b", "unconfirmed", nil, nil)

	r := &reader{items: []metav1.PartialObjectMetadata{*confirmedInfra, *unconfirmedInfra}}
	// The kube-apiserver asks for the confirmed one, but the collection also holds another.
	resp := handle(Handler(r), collectionRequest(t, "infrastructures", confirmedInfra))
	assertDenied(t, resp, `Infrastructure shoot--a--b/unconfirmed must have a "confirmation.gardener.cloud/deletion" annotation to delete`)
	assert.Equal(t, 1, r.lists)
	assert.Equal(t, extensionKind("InfrastructureList"), r.listGVK)
	assert.Equal(t, "shoot--a--b", r.opts.Namespace)
	assert.Nil(t, r.opts.LabelSelector)

	r.items = r.items[:1]
	assert.True(t, handle(Handler(r), collectionRequest(t, "infrastructures", confirmedInfra)).Allowed)

	r.items = nil
	assert.True(t, handle(Handler(r), collectionRequest(t, "infrastructures", confirmedInfra)).Allowed, "nothing left to delete")
}

func TestClusterScopedCollection(t *testing.T) {
	bucket := object(kinds["backupbuckets"], "", "bucket", nil, nil)
	r := &reader{items: []metav1.PartialObjectMetadata{*bucket}}
	resp := handle(Handler(r), collectionRequest(t, "backupbuckets", bucket))
	assertDenied(t, resp, `BackupBucket bucket must have`)
	assert.Empty(t, r.opts.Namespace, "all BackupBuckets")
}

func TestCRDCollectionChecksProtectedCRDs(t *testing.T) {
	crd := object(crdKind, "", "workers.extensions.gardener.cloud", protectedLabel, confirmation("true"))
	other := object(crdKind, "", "networks.extensions.gardener.cloud", protectedLabel, nil)
	r := &reader{items: []metav1.PartialObjectMetadata{*crd, *other}}
	resp := handle(Handler(r), collectionRequest(t, "customresourcedefinitions", crd))
	assertDenied(t, resp, "CustomResourceDefinition networks.extensions.gardener.cloud must have")
	assert.Equal(t, schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"}, r.listGVK)
	assert.Empty(t, r.opts.Namespace)
	require.NotNil(t, r.opts.LabelSelector)
	assert.Equal(t, ProtectedLabel+"=true", r.opts.LabelSelector.String())

	r.items = r.items[:1]
	assert.True(t, handle(Handler(r), collectionRequest(t, "customresourcedefinitions", crd)).Allowed)
}

func TestCollectionListFailures(t *testing.T) {
	obj := object(kinds["workers"], "ns", "w", nil, confirmation("true"))

	resp := handle(Handler(&reader{err: apierrors.NewNotFound(schema.GroupResource{Group: "extensions.gardener.cloud", Resource: "workers"}, "")}), collectionRequest(t, "workers", obj))
	assert.True(t, resp.Allowed)
	assert.Equal(t, "object was not found", resp.Result.Message)

	resp = handle(Handler(&reader{err: errors.New("connection refused")}), collectionRequest(t, "workers", obj))
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusInternalServerError, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "connection refused")
}

func TestMalformedRequests(t *testing.T) {
	h := Handler(&reader{})
	req := deleteRequest(t, "workers", object(kinds["workers"], "ns", "w", nil, nil))
	req.OldObject = runtime.RawExtension{Raw: []byte("not json")}
	resp := handle(h, req)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)

	req.OldObject = runtime.RawExtension{}
	resp = handle(h, req)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
	assert.Equal(t, "no object found in admission request", resp.Result.Message)
}

func FuzzCRDDeletionProtection(f *testing.F) {
	crd := object(crdKind, "", "workers.extensions.gardener.cloud", protectedLabel, nil)
	infra := object(kinds["infrastructures"], "ns", "i", nil, confirmation("true"))
	r := &reader{items: []metav1.PartialObjectMetadata{*infra}}
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(r), webhooktest.Log),
		webhooktest.AdmissionReview(f, deleteRequest(f, "customresourcedefinitions", crd)),
		webhooktest.AdmissionReview(f, deleteRequest(f, "infrastructures", infra)),
		webhooktest.AdmissionReview(f, collectionRequest(f, "infrastructures", infra)))
}

// BenchmarkCRDDeletionProtection measures the handler: a single DELETE, also as the HTTP
// request the kube-apiserver sends (AdmissionReview in and out, no network), and one object's
// call of a DELETECOLLECTION over 100 objects served by an in-memory reader.
func BenchmarkCRDDeletionProtection(b *testing.B) {
	b.Run("delete", func(b *testing.B) {
		h := Handler(&reader{})
		req := deleteRequest(b, "infrastructures", object(kinds["infrastructures"], "shoot--a--b", "i", nil, confirmation("true")))
		b.ReportAllocs()
		for b.Loop() {
			if !handle(h, req).Allowed {
				b.Fatal("denied")
			}
		}
	})
	b.Run("delete-http", func(b *testing.B) {
		wh := webhook.Admission(Name, Path, Handler(&reader{}), webhooktest.Log)
		body := webhooktest.AdmissionReview(b, deleteRequest(b, "infrastructures", object(kinds["infrastructures"], "shoot--a--b", "i", nil, confirmation("true"))))
		webhooktest.BenchmarkAdmission(b, wh, body)
	})
	b.Run("deletecollection-100", func(b *testing.B) {
		r := &reader{}
		for i := range 100 {
			r.items = append(r.items, *object(kinds["infrastructures"], "shoot--a--b", fmt.Sprintf("i-%d", i), nil, confirmation("true")))
		}
		h := Handler(r)
		req := collectionRequest(b, "infrastructures", &r.items[0])
		b.ReportAllocs()
		for b.Loop() {
			if !handle(h, req).Allowed {
				b.Fatal("denied")
			}
		}
	})
}
