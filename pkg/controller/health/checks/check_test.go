package checks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// targetScheme is what the target cluster's reader must know: the built-in kinds and the CRDs.
var targetScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := kubernetesscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	apiextensionsinstall.Install(s)
	return s
}()

func skipAnnotated[T client.Object](obj T) T {
	obj.SetAnnotations(map[string]string{resourcesv1alpha1.SkipHealthCheck: "true"})
	return obj
}

func toUnstructured(t *testing.T, obj client.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

func TestCheckHealth(t *testing.T) {
	failedJob := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "R", Message: "M"}}}}
	pendingPod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	badPrometheus := custom(PrometheusKind, 1, map[string]any{"replicas": "two"}, nil)
	v1beta1CRD := &apiextensionsv1beta1.CustomResourceDefinition{Status: apiextensionsv1beta1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1beta1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1beta1.NamesAccepted, Status: apiextensionsv1beta1.ConditionTrue},
		{Type: apiextensionsv1beta1.Established, Status: apiextensionsv1beta1.ConditionFalse, Reason: "Installing", Message: "not yet"},
	}}}
	// A default that is not JSON does not convert to v1: the check cannot run.
	unconvertibleCRD := &apiextensionsv1beta1.CustomResourceDefinition{Spec: apiextensionsv1beta1.CustomResourceDefinitionSpec{
		Validation: &apiextensionsv1beta1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1beta1.JSONSchemaProps{Default: &apiextensionsv1beta1.JSON{Raw: []byte("{")}}},
	}}

	for _, tc := range []struct {
		name        string
		obj         client.Object
		wantChecked bool
		wantErr     string
	}{
		{name: "typed built-in, unhealthy", obj: failedJob, wantChecked: true, wantErr: `condition "Failed" has invalid status True (expected False) due to R: M`},
		{name: "typed built-in, healthy", obj: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, wantChecked: true},
		{name: "skip-health-check", obj: skipAnnotated(pendingPod.DeepCopy())},
		{name: "skip-health-check must be exactly true", obj: func() client.Object {
			p := pendingPod.DeepCopy()
			p.SetAnnotations(map[string]string{resourcesv1alpha1.SkipHealthCheck: "True"})
			return p
		}(), wantChecked: true, wantErr: `pod is in invalid phase "Pending" (expected one of ["Running" "Succeeded"])`},
		{name: "unstructured built-in is checked as typed", obj: toUnstructured(t, pendingPod, corev1.SchemeGroupVersion.WithKind("Pod")),
			wantChecked: true, wantErr: `pod is in invalid phase "Pending" (expected one of ["Running" "Succeeded"])`},
		{name: "unstructured built-in that does not decode", obj: func() client.Object {
			u := toUnstructured(t, pendingPod, corev1.SchemeGroupVersion.WithKind("Pod"))
			u.Object["status"] = "broken"
			return u
		}(), wantErr: `decoding Pod "": `},
		{name: "unstructured built-in with skip-health-check", obj: skipAnnotated(toUnstructured(t, pendingPod, corev1.SchemeGroupVersion.WithKind("Pod")))},
		{name: "kind without a check", obj: &corev1.ConfigMap{}},
		{name: "older API version has no check", obj: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1beta2", "kind": "Deployment"}}},
		{name: "unknown kind has no check", obj: custom(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, 1, nil, nil)},
		{name: "custom kind in another version has no check", obj: custom(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1alpha1", Kind: "Prometheus"}, 1, nil, nil)},
		{name: "custom kind", obj: custom(IssuerKind, 1, nil, nil), wantChecked: true, wantErr: `issuer state is "" ("Ready" expected)`},
		{name: "custom kind with skip-health-check", obj: skipAnnotated(custom(IssuerKind, 1, nil, nil))},
		{name: "custom kind that does not decode", obj: badPrometheus, wantErr: `decoding Prometheus "obj": `},
		{name: "v1 CRD", obj: &apiextensionsv1.CustomResourceDefinition{}, wantChecked: true, wantErr: `condition "NamesAccepted" is missing`},
		{name: "v1beta1 CRD is checked as v1", obj: v1beta1CRD, wantChecked: true, wantErr: `condition "Established" has invalid status False (expected True) due to Installing: not yet`},
		{name: "v1beta1 CRD that does not convert", obj: unconvertibleCRD, wantErr: "unexpected end of JSON input"},
		{name: "DaemonSet", obj: &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{NumberMisscheduled: 1}}, wantChecked: true, wantErr: "misscheduled pods found (1)"},
		{name: "Deployment", obj: &appsv1.Deployment{}, wantChecked: true, wantErr: `condition "Available" is missing`},
		{name: "ReplicaSet", obj: &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}, wantChecked: true, wantErr: "ReplicaSet does not have minimum availability"},
		{name: "ReplicationController", obj: &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1)}}, wantChecked: true,
			wantErr: "ReplicationController does not have minimum availability"},
		{name: "Service", obj: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}, wantChecked: true, wantErr: "service is missing ingress status"},
		{name: "StatefulSet", obj: &appsv1.StatefulSet{}, wantChecked: true, wantErr: "not enough ready replicas (0/1)"},
		{name: "VerticalPodAutoscaler", obj: custom(VerticalPodAutoscalerKind, 1, nil, nil), wantChecked: true},
		{name: "Alertmanager", obj: custom(AlertmanagerKind, 1, nil, nil), wantChecked: true, wantErr: `condition "Available" is missing`},
		{name: "Certificate", obj: custom(CertificateKind, 1, nil, nil), wantChecked: true, wantErr: `certificate state is "" ("Ready" expected)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := CheckHealth(tc.obj)
			assert.Equal(t, tc.wantChecked, checked)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

// requestLog records the reads that reach the reader: verb, kind, representation and key or
// options, so that tests assert what a call costs.
type requestLog struct {
	client.Reader
	requests []string
}

func representation(obj runtime.Object) string {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		return "unstructured"
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return "metadata"
	}
	return "typed"
}

func (r *requestLog) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvks, _, err := targetScheme.ObjectKinds(obj)
		if err != nil {
			return err
		}
		gvk = gvks[0]
	}
	r.requests = append(r.requests, fmt.Sprintf("GET %s %s %s", gvk.GroupVersion().String()+"/"+gvk.Kind, representation(obj), key))
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *requestLog) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	selector := ""
	if o.LabelSelector != nil {
		selector = o.LabelSelector.String()
	}
	var fieldSelector []string
	if o.FieldSelector != nil {
		for _, req := range o.FieldSelector.Requirements() {
			fieldSelector = append(fieldSelector, req.Field+"="+req.Value)
		}
		slices.Sort(fieldSelector)
	}
	r.requests = append(r.requests, fmt.Sprintf("LIST %T %s ns=%s labels=%s fields=%s", list, representation(list), o.Namespace, selector, strings.Join(fieldSelector, ",")))
	return r.Reader.List(ctx, list, opts...)
}

func newReader(objs ...client.Object) *requestLog {
	return &requestLog{Reader: fake.NewClientBuilder().WithScheme(targetScheme).WithObjects(objs...).Build()}
}

func rolledOutDeployment(namespace, name string, replicas int32, matchLabels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{
			deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable"),
			deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable"),
		}},
	}
}

func runningPod(namespace, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func TestCheckProgressing(t *testing.T) {
	app := map[string]string{"app": "web"}
	deployment := rolledOutDeployment("ns", "web", 2, app)
	podList := "LIST *v1.PodList typed ns=ns labels=app=web fields="
	rolling := rolledOutDeployment("ns", "web", 2, app)
	rolling.Status.Conditions[1] = deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated")

	for _, tc := range []struct {
		name            string
		obj             client.Object
		pods            []client.Object
		wantProgressing bool
		wantDescription string
		wantRequests    []string
	}{
		{name: "rolled out with exactly its pods", obj: deployment,
			pods: []client.Object{runningPod("ns", "a", app), runningPod("ns", "b", app),
				runningPod("other", "c", app), runningPod("ns", "d", map[string]string{"app": "db"})},
			wantDescription: "Deployment is fully rolled out", wantRequests: []string{podList}},
		{name: "old pods remain", obj: deployment,
			pods:            []client.Object{runningPod("ns", "a", app), runningPod("ns", "b", app), runningPod("ns", "old", app)},
			wantProgressing: true, wantDescription: "there are still non-terminated old pods", wantRequests: []string{podList}},
		{name: "pods missing", obj: deployment, pods: []client.Object{runningPod("ns", "a", app)},
			wantProgressing: true, wantDescription: "there are still non-terminated old pods", wantRequests: []string{podList}},
		{name: "status progressing needs no pods", obj: rolling, wantProgressing: true, wantDescription: "msg of ReplicaSetUpdated"},
		{name: "unstructured Deployment", obj: toUnstructured(t, deployment, appsv1.SchemeGroupVersion.WithKind("Deployment")),
			pods:            []client.Object{runningPod("ns", "a", app)},
			wantProgressing: true, wantDescription: "there are still non-terminated old pods", wantRequests: []string{podList}},
		{name: "skip-health-check", obj: skipAnnotated(rolling.DeepCopy())},
		{name: "StatefulSet", obj: &appsv1.StatefulSet{}, wantProgressing: true, wantDescription: "0 of 1 replica(s) have been updated"},
		{name: "DaemonSet", obj: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, wantProgressing: true, wantDescription: "observed generation outdated (0/1)"},
		{name: "Prometheus", obj: custom(PrometheusKind, 1, nil, nil), wantProgressing: true, wantDescription: `condition "Reconciled" is missing`},
		{name: "Alertmanager", obj: custom(AlertmanagerKind, 1, nil, nil), wantProgressing: true, wantDescription: `condition "Reconciled" is missing`},
		{name: "Certificate", obj: custom(CertificateKind, 1, nil, nil), wantProgressing: true, wantDescription: "observed generation outdated (0/1)"},
		{name: "Issuer", obj: custom(IssuerKind, 2, nil, map[string]any{"observedGeneration": int64(2)}), wantDescription: "Issuer is fully rolled out"},
		{name: "custom kind with skip-health-check", obj: skipAnnotated(custom(IssuerKind, 1, nil, nil))},
		{name: "VPA is not tracked", obj: custom(VerticalPodAutoscalerKind, 1, nil, nil)},
		{name: "ReplicaSet is not tracked", obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newReader(tc.pods...)
			progressing, description, err := CheckProgressing(context.Background(), reader, tc.obj)
			require.NoError(t, err)
			assert.Equal(t, tc.wantProgressing, progressing)
			assert.Equal(t, tc.wantDescription, description)
			assert.Equal(t, tc.wantRequests, reader.requests)
		})
	}
}

func TestCheckProgressingErrors(t *testing.T) {
	listFails := fake.NewClientBuilder().WithScheme(targetScheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("list failed")
		},
	}).Build()
	_, _, err := CheckProgressing(context.Background(), listFails, rolledOutDeployment("ns", "web", 1, nil))
	assert.EqualError(t, err, "list failed")

	_, _, err = CheckProgressing(context.Background(), listFails, custom(PrometheusKind, 1, map[string]any{"replicas": "two"}, nil))
	assert.ErrorContains(t, err, "decoding Prometheus")

	broken := toUnstructured(t, &appsv1.StatefulSet{}, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	broken.Object["spec"] = "broken"
	_, _, err = CheckProgressing(context.Background(), listFails, broken)
	assert.ErrorContains(t, err, "decoding StatefulSet")
}

// Without a selector the Deployment is invalid; its pods are then all those of its namespace
// rather than a crash.
func TestCheckProgressingDeploymentWithoutSelector(t *testing.T) {
	d := rolledOutDeployment("ns", "web", 2, nil)
	d.Spec.Selector = nil
	reader := newReader(runningPod("ns", "a", nil), runningPod("ns", "b", map[string]string{"x": "y"}), runningPod("other", "c", nil))
	progressing, _, err := CheckProgressing(context.Background(), reader, d)
	require.NoError(t, err)
	assert.False(t, progressing)
	assert.Equal(t, []string{"LIST *v1.PodList typed ns=ns labels= fields="}, reader.requests)
}
