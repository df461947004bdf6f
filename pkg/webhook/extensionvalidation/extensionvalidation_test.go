package extensionvalidation

import (
	"context"
	"net/http"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func review(t testing.TB, op admissionv1.Operation, obj, old runtime.Object) admission.Response {
	t.Helper()
	return Handler().Handle(context.Background(), webhooktest.Request(t, op, obj, old))
}

// assertInvalid checks that the answer is Gardener's: 422 Invalid, with a cause for each of
// the fields and for no other.
func assertInvalid(t *testing.T, resp admission.Response, fields ...string) {
	t.Helper()
	require.False(t, resp.Allowed, "allowed")
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusUnprocessableEntity, resp.Result.Code)
	assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
	require.NotNil(t, resp.Result.Details, resp.Result.Message)
	var got []string
	for _, c := range resp.Result.Details.Causes {
		got = append(got, c.Field)
	}
	assert.ElementsMatch(t, fields, got, resp.Result.Message)
}

func assertAllowed(t *testing.T, resp admission.Response) {
	t.Helper()
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

func TestGardenersPaths(t *testing.T) {
	deps := webhook.Deps{Config: &rmv1alpha1.ResourceManagerConfiguration{}, Log: webhooktest.Log}
	assert.Equal(t, Name, Webhook.Name)
	wh, err := Webhook.New(deps)
	require.NoError(t, err)
	assert.Equal(t, Name, wh.Name)
	assert.Equal(t, []string{
		"/validate-extensions-gardener-cloud-v1alpha1-backupbucket",
		"/validate-extensions-gardener-cloud-v1alpha1-backupentry",
		"/validate-extensions-gardener-cloud-v1alpha1-bastion",
		"/validate-extensions-gardener-cloud-v1alpha1-containerruntime",
		"/validate-extensions-gardener-cloud-v1alpha1-controlplane",
		"/validate-extensions-gardener-cloud-v1alpha1-dnsrecord",
		"/validate-druid-gardener-cloud-v1alpha1-etcd",
		"/validate-extensions-gardener-cloud-v1alpha1-extension",
		"/validate-extensions-gardener-cloud-v1alpha1-infrastructure",
		"/validate-extensions-gardener-cloud-v1alpha1-network",
		"/validate-extensions-gardener-cloud-v1alpha1-operatingsystemconfig",
		"/validate-extensions-gardener-cloud-v1alpha1-selfhostedshootexposure",
		"/validate-extensions-gardener-cloud-v1alpha1-worker",
	}, wh.Paths())

	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	assert.False(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	cfg.Webhooks.ExtensionValidation.Enabled = true
	assert.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
}

func TestEveryKindValidOnCreateAndUpdate(t *testing.T) {
	for _, obj := range validObjects() {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		assertAllowed(t, review(t, admissionv1.Create, obj, nil))
		assertAllowed(t, review(t, admissionv1.Update, obj, obj.DeepCopyObject()))
		assert.Contains(t, byKind, obj.GetObjectKind().GroupVersionKind().GroupKind(), kind)
	}
	assert.Len(t, validObjects(), len(kinds), "a valid object of every kind")
}

func TestInvalidAnswer(t *testing.T) {
	infra := infrastructure()
	infra.Spec.Region = ""
	resp := review(t, admissionv1.Create, infra, nil)
	assertInvalid(t, resp, "spec.region")
	assert.Equal(t, `Infrastructure.extensions.gardener.cloud "infra" is invalid: spec.region: Required value: field is required`, resp.Result.Message)
	assert.Equal(t, "extensions.gardener.cloud", resp.Result.Details.Group)
	assert.Equal(t, "Infrastructure", resp.Result.Details.Kind)
	assert.Equal(t, "infra", resp.Result.Details.Name)
}

func TestMetadata(t *testing.T) {
	infra := infrastructure()
	infra.Name = "Not_A_Name"
	infra.Namespace = ""
	assertInvalid(t, review(t, admissionv1.Create, infra, nil), "metadata.name", "metadata.namespace")

	// BackupBuckets and BackupEntries are cluster-scoped.
	bucket := backupBucket()
	bucket.Namespace = "garden"
	assertInvalid(t, review(t, admissionv1.Create, bucket, nil), "metadata.namespace")

	old := infrastructure()
	old.UID = "1"
	infra = infrastructure()
	infra.UID = "2"
	assertInvalid(t, review(t, admissionv1.Update, infra, old), "metadata.uid")
}

func TestNoSpecChangeWhileDeleting(t *testing.T) {
	deleting := infrastructure()
	deleting.DeletionTimestamp = &deletionTimestamp
	deleting.Finalizers = []string{"extensions.gardener.cloud/aws"}

	changed := deleting.DeepCopy()
	changed.Spec.Region = "eu-central-1"
	changed.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"a":1}`)}
	resp := review(t, admissionv1.Update, changed, deleting)
	assertInvalid(t, resp, "spec")
	assert.Contains(t, resp.Result.Message, "cannot update infrastructure spec if deletion timestamp is set. Requested changes: spec.providerConfig,spec.region")

	finalized := deleting.DeepCopy()
	finalized.Finalizers = nil
	assertAllowed(t, review(t, admissionv1.Update, finalized, deleting))

	// Until the deletion starts, mutable fields may change.
	notDeleting := infrastructure()
	changed = notDeleting.DeepCopy()
	changed.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"a":1}`)}
	assertAllowed(t, review(t, admissionv1.Update, changed, notDeleting))
}

func TestSpecChanges(t *testing.T) {
	a, b := infrastructure().Spec, infrastructure().Spec
	assert.Empty(t, specChanges(&a, &b, nil, nil))
	b.SSHPublicKey = []byte{}
	assert.Empty(t, specChanges(&a, &b, nil, nil), "nil and empty are equal")
	b.Region = "other"
	assert.Equal(t, []string{"spec.region"}, specChanges(&a, &b, nil, nil))
	a.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{}`)}
	assert.Equal(t, []string{"spec.providerConfig", "spec.region"}, specChanges(&a, &b, nil, nil))

	// The members our types lack count, typed.
	w := worker().Spec
	limit := func(n int32) *workerSpecNewer {
		p := workerPoolNewer{}
		p.MachineControllerManager = &struct {
			MachinePreserveTimeout       *metav1.Duration `json:"machinePreserveTimeout,omitempty"`
			AutoPreserveFailedMachineMax *int32           `json:"autoPreserveFailedMachineMax,omitempty"`
		}{AutoPreserveFailedMachineMax: &n}
		return &workerSpecNewer{Pools: []workerPoolNewer{p}}
	}
	assert.Empty(t, specChanges(&w, &w, limit(1), limit(1)))
	assert.Equal(t, []string{"spec.pools"}, specChanges(&w, &w, limit(1), limit(2)))
	assert.Equal(t, []string{"spec.pools", "spec.providerConfig", "spec.region"}, specChanges(&b, &a, limit(1), limit(2)))
}

func TestOtherOperationsPass(t *testing.T) {
	infra := infrastructure()
	infra.Spec.Type = ""
	for _, op := range []admissionv1.Operation{admissionv1.Delete, admissionv1.Connect} {
		assertAllowed(t, review(t, op, infra, infra))
	}
}

func TestUnknownKindsAndMalformedRequests(t *testing.T) {
	cluster := &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "shoot--a--b"}}
	cluster.SetGroupVersionKind(extensionsv1alpha1.SchemeGroupVersion.WithKind("Cluster"))
	resp := review(t, admissionv1.Create, cluster, nil)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "does not validate extensions.gardener.cloud/v1alpha1 Cluster")

	infra := infrastructure()
	infra.APIVersion = "extensions.gardener.cloud/v1beta1"
	resp = review(t, admissionv1.Create, infra, nil)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)

	req := webhooktest.Request(t, admissionv1.Update, infrastructure(), infrastructure())
	req.OldObject.Raw = []byte(`{"spec":"not an object"}`)
	resp = Handler().Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
	assert.Contains(t, resp.Result.Message, "decoding old Infrastructure")

	req.Object.Raw = []byte(`not json`)
	resp = Handler().Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
}

func FuzzExtensionValidation(f *testing.F) {
	var seeds [][]byte
	for _, obj := range validObjects() {
		seeds = append(seeds, webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Create, obj, nil)))
		seeds = append(seeds, webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Update, obj, obj.DeepCopyObject())))
	}
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path(operatingSystemConfigs.kind), Handler(), webhooktest.Log), seeds...)
}

// BenchmarkExtensionValidation measures the handler on valid objects: the smallest kind, the
// largest rule sets, an UPDATE, and a Worker's CREATE as the HTTP request the kube-apiserver
// sends (AdmissionReview in and out, no network).
func deletingWorker() *extensionsv1alpha1.Worker {
	w := worker()
	w.DeletionTimestamp = &deletionTimestamp
	return w
}

func deletingEtcdObject() *unstructured.Unstructured {
	e := etcdObject()
	e.SetDeletionTimestamp(&deletionTimestamp)
	return e
}

func BenchmarkExtensionValidation(b *testing.B) {
	for _, bc := range []struct {
		name     string
		obj, old runtime.Object
		op       admissionv1.Operation
	}{
		{"create-extension", extension(), nil, admissionv1.Create},
		{"create-dnsrecord", dnsRecord(), nil, admissionv1.Create},
		{"create-operatingsystemconfig", operatingSystemConfig(), nil, admissionv1.Create},
		{"create-worker", worker(), nil, admissionv1.Create},
		{"update-worker", worker(), worker(), admissionv1.Update},
		{"update-etcd", etcdObject(), etcdObject(), admissionv1.Update},
		// Being deleted: the specs are compared, typed and in the members the types lack.
		{"update-worker-deleting", deletingWorker(), deletingWorker(), admissionv1.Update},
		{"update-etcd-deleting", deletingEtcdObject(), deletingEtcdObject(), admissionv1.Update},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := Handler()
			req := webhooktest.Request(b, bc.op, bc.obj, bc.old)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.Handle(ctx, req); !resp.Allowed {
					b.Fatalf("denied: %+v", resp.Result)
				}
			}
		})
	}
	b.Run("create-worker-http", func(b *testing.B) {
		path := Path(workers.kind)
		wh := webhook.Admission(Name, path, Handler(), webhooktest.Log)
		body := webhooktest.AdmissionReview(b, webhooktest.Request(b, admissionv1.Create, worker(), nil))
		webhooktest.BenchmarkAdmission(b, wh, body)
	})
}
