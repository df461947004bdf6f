package checks

import (
	"context"
	"errors"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var (
	now     = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	earlier = metav1.NewTime(now.Add(-time.Hour))
)

func TestShouldCheck(t *testing.T) {
	applied := func(status gardencorev1beta1.ConditionStatus) []gardencorev1beta1.Condition {
		return []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesApplied, Status: status}}
	}
	mr := func(class *string, annotations map[string]string, conditions []gardencorev1beta1.Condition) *resourcesv1alpha1.ManagedResource {
		return &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{Class: class},
			Status:     resourcesv1alpha1.ManagedResourceStatus{Conditions: conditions},
		}
	}
	deleting := mr(nil, nil, applied(gardencorev1beta1.ConditionTrue))
	deleting.DeletionTimestamp = &earlier

	for _, tc := range []struct {
		name  string
		mr    *resourcesv1alpha1.ManagedResource
		class string
		want  bool
	}{
		{"applied", mr(nil, nil, applied(gardencorev1beta1.ConditionTrue)), "", true},
		{"applied Unknown", mr(nil, nil, applied(gardencorev1beta1.ConditionUnknown)), "", true},
		{"not applied yet", mr(nil, nil, nil), "", false},
		{"being applied", mr(nil, nil, applied(gardencorev1beta1.ConditionProgressing)), "", false},
		{"apply failed", mr(nil, nil, applied(gardencorev1beta1.ConditionFalse)), "", false},
		{"other conditions do not count", mr(nil, nil, []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesHealthy, Status: gardencorev1beta1.ConditionTrue}}), "", false},
		{"ignored", mr(nil, map[string]string{resourcesv1alpha1.Ignore: "true"}, applied(gardencorev1beta1.ConditionTrue)), "", false},
		{"ignored with another truthy value", mr(nil, map[string]string{resourcesv1alpha1.Ignore: "1"}, applied(gardencorev1beta1.ConditionTrue)), "", false},
		{"ignore false", mr(nil, map[string]string{resourcesv1alpha1.Ignore: "false"}, applied(gardencorev1beta1.ConditionTrue)), "", true},
		{"ignore not a bool", mr(nil, map[string]string{resourcesv1alpha1.Ignore: "yes"}, applied(gardencorev1beta1.ConditionTrue)), "", true},
		{"being deleted", deleting, "", false},
		{"no class, default class", mr(nil, nil, applied(gardencorev1beta1.ConditionTrue)), "resources", true},
		{"empty class, default class", mr(ptr.To(""), nil, applied(gardencorev1beta1.ConditionTrue)), "", true},
		{"explicit default class", mr(ptr.To("resources"), nil, applied(gardencorev1beta1.ConditionTrue)), "", true},
		{"other class", mr(ptr.To("seed"), nil, applied(gardencorev1beta1.ConditionTrue)), "", false},
		{"own class", mr(ptr.To("seed"), nil, applied(gardencorev1beta1.ConditionTrue)), "seed", true},
		{"no class, non-default class", mr(nil, nil, applied(gardencorev1beta1.ConditionTrue)), "seed", false},
		{"all classes", mr(ptr.To("shoot"), nil, applied(gardencorev1beta1.ConditionTrue)), "*", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ShouldCheck(tc.mr, tc.class))
		})
	}
}

func ref(apiVersion, kind, namespace, name string) resourcesv1alpha1.ObjectReference {
	return resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}}
}

func managedResource(conditions []gardencorev1beta1.Condition, refs ...resourcesv1alpha1.ObjectReference) *resourcesv1alpha1.ManagedResource {
	return &resourcesv1alpha1.ManagedResource{Status: resourcesv1alpha1.ManagedResourceStatus{Conditions: conditions, Resources: refs}}
}

// eventIndexes are the fields the fake client must index to answer the Service events LIST.
var eventIndexes = map[string]client.IndexerFunc{
	"involvedObject.apiVersion": func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.APIVersion} },
	"involvedObject.kind":       func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Kind} },
	"involvedObject.name":       func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} },
	"involvedObject.namespace":  func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Namespace} },
	"type":                      func(o client.Object) []string { return []string{o.(*corev1.Event).Type} },
}

func newEventReader(objs ...client.Object) *requestLog {
	b := fake.NewClientBuilder().WithScheme(targetScheme).WithObjects(objs...)
	for field, index := range eventIndexes {
		b = b.WithIndex(&corev1.Event{}, field, index)
	}
	return &requestLog{Reader: b.Build()}
}

func TestHealth(t *testing.T) {
	healthyPod := runningPod("ns", "pod", nil)
	pendingPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pending"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	issuer := custom(IssuerKind, 1, nil, map[string]any{"state": "Error"})
	issuer.SetName("issuer")
	thing := custom(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, 1, nil, nil)
	loadBalancer := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lb"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	crd := &apiextensionsv1beta1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.example.com"}}

	for _, tc := range []struct {
		name         string
		objs         []client.Object
		refs         []resourcesv1alpha1.ObjectReference
		wantStatus   gardencorev1beta1.ConditionStatus
		wantReason   string
		wantMessage  string
		wantRequests []string
	}{
		{name: "no resources", wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "ResourcesHealthy", wantMessage: "All resources are healthy."},
		{name: "all healthy, each object read once in its representation",
			objs:       []client.Object{healthyPod, configMap, thing},
			refs:       []resourcesv1alpha1.ObjectReference{ref("v1", "Pod", "ns", "pod"), ref("v1", "ConfigMap", "ns", "cm"), ref("example.com/v1", "Thing", "ns", "obj"), ref("v1", "Pod", "ns", "pod")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "ResourcesHealthy", wantMessage: "All resources are healthy.",
			wantRequests: []string{"GET v1/Pod typed ns/pod", "GET v1/ConfigMap metadata ns/cm", "GET example.com/v1/Thing metadata ns/obj"}},
		{name: "missing object, later ones not read",
			objs:       []client.Object{healthyPod},
			refs:       []resourcesv1alpha1.ObjectReference{ref("v1", "ConfigMap", "ns", "gone"), ref("v1", "Pod", "ns", "pod")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ConfigMapMissing", wantMessage: `Required ConfigMap "gone" in namespace "ns" is missing`,
			wantRequests: []string{"GET v1/ConfigMap metadata ns/gone"}},
		{name: "missing object of a kind without a check",
			refs:       []resourcesv1alpha1.ObjectReference{ref("resources.gardener.cloud/v1alpha1", "ManagedResource", "ns", "gone")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ManagedResourceMissing", wantMessage: `Required ManagedResource "gone" in namespace "ns" is missing`,
			wantRequests: []string{"GET resources.gardener.cloud/v1alpha1/ManagedResource metadata ns/gone"}},
		{name: "missing cluster-scoped object",
			refs:       []resourcesv1alpha1.ObjectReference{ref("rbac.authorization.k8s.io/v1", "ClusterRole", "", "gone")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ClusterRoleMissing", wantMessage: `Required ClusterRole "gone" in namespace "" is missing`,
			wantRequests: []string{"GET rbac.authorization.k8s.io/v1/ClusterRole metadata /gone"}},
		{name: "unhealthy object after healthy ones",
			objs:       []client.Object{healthyPod, pendingPod},
			refs:       []resourcesv1alpha1.ObjectReference{ref("v1", "Pod", "ns", "pod"), ref("v1", "Pod", "ns", "pending"), ref("v1", "ConfigMap", "ns", "cm")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "PodUnhealthy",
			wantMessage:  `Pod "ns/pending" is unhealthy: pod is in invalid phase "Pending" (expected one of ["Running" "Succeeded"])`,
			wantRequests: []string{"GET v1/Pod typed ns/pod", "GET v1/Pod typed ns/pending"}},
		{name: "unhealthy object with skip-health-check only has to exist",
			objs:       []client.Object{skipAnnotated(pendingPod.DeepCopy())},
			refs:       []resourcesv1alpha1.ObjectReference{ref("v1", "Pod", "ns", "pending")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "ResourcesHealthy", wantMessage: "All resources are healthy.",
			wantRequests: []string{"GET v1/Pod typed ns/pending"}},
		{name: "unhealthy custom object",
			objs:       []client.Object{issuer},
			refs:       []resourcesv1alpha1.ObjectReference{ref("cert.gardener.cloud/v1alpha1", "Issuer", "ns", "issuer")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "IssuerUnhealthy", wantMessage: `Issuer "ns/issuer" is unhealthy: issuer state is "Error" ("Ready" expected)`,
			wantRequests: []string{"GET cert.gardener.cloud/v1alpha1/Issuer unstructured ns/issuer"}},
		{name: "custom kind in an unchecked version only has to exist",
			objs:       []client.Object{func() client.Object { i := issuer.DeepCopy(); i.SetAPIVersion("cert.gardener.cloud/v1beta1"); return i }()},
			refs:       []resourcesv1alpha1.ObjectReference{ref("cert.gardener.cloud/v1beta1", "Issuer", "ns", "issuer")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "ResourcesHealthy", wantMessage: "All resources are healthy.",
			wantRequests: []string{"GET cert.gardener.cloud/v1beta1/Issuer metadata ns/issuer"}},
		{name: "unhealthy cluster-scoped v1beta1 CRD",
			objs:       []client.Object{crd},
			refs:       []resourcesv1alpha1.ObjectReference{ref("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "", "things.example.com")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "CustomResourceDefinitionUnhealthy",
			wantMessage:  `CustomResourceDefinition "/things.example.com" is unhealthy: condition "NamesAccepted" is missing`,
			wantRequests: []string{"GET apiextensions.k8s.io/v1beta1/CustomResourceDefinition typed /things.example.com"}},
		{name: "unhealthy Service without events",
			objs:       []client.Object{loadBalancer},
			refs:       []resourcesv1alpha1.ObjectReference{ref("v1", "Service", "ns", "lb")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ServiceUnhealthy", wantMessage: `Service "ns/lb" is unhealthy: service is missing ingress status`,
			wantRequests: []string{"GET v1/Service typed ns/lb",
				"LIST *v1.EventList typed ns=ns labels= fields=involvedObject.apiVersion=v1,involvedObject.kind=Service,involvedObject.name=lb,involvedObject.namespace=ns,type=Warning"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newEventReader(tc.objs...)
			condition, err := Health(context.Background(), reader, managedResource(nil, tc.refs...), now)
			require.NoError(t, err)
			assert.Equal(t, gardencorev1beta1.Condition{
				Type: resourcesv1alpha1.ResourcesHealthy, Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMessage,
				LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now),
			}, condition)
			assert.Equal(t, tc.wantRequests, reader.requests)
		})
	}
}

func TestHealthServiceEvents(t *testing.T) {
	loadBalancer := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lb"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	event := func(name string, lastAgo time.Duration, mutate func(*corev1.Event)) *corev1.Event {
		e := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "ns", Name: name},
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: "ns", Name: "lb"},
			Type:           corev1.EventTypeWarning, Message: "message " + name, Count: 1,
			Source:         corev1.EventSource{Component: "service-controller"},
			FirstTimestamp: metav1.NewTime(now.Add(-lastAgo)), LastTimestamp: metav1.NewTime(now.Add(-lastAgo)),
		}
		if mutate != nil {
			mutate(e)
		}
		return e
	}
	objs := []client.Object{
		loadBalancer,
		event("e1", 70*time.Minute, nil),
		event("e2", 60*time.Minute, nil),
		event("e3", 50*time.Minute, func(e *corev1.Event) { e.Count = 4; e.FirstTimestamp = metav1.NewTime(now.Add(-3 * time.Hour)) }),
		event("e4", 40*time.Minute, func(e *corev1.Event) {
			e.FirstTimestamp = metav1.Time{}
			e.EventTime = metav1.NewMicroTime(now.Add(-45 * time.Second))
			e.Source = corev1.EventSource{}
			e.ReportingController = "cloud-controller"
		}),
		event("e5", 30*time.Minute, func(e *corev1.Event) { e.FirstTimestamp = metav1.Time{} }),
		event("e6", 20*time.Minute, nil),
		event("normal", time.Minute, func(e *corev1.Event) { e.Type = corev1.EventTypeNormal }),
		event("other-service", time.Minute, func(e *corev1.Event) { e.InvolvedObject.Name = "other" }),
	}
	reader := newEventReader(objs...)
	condition, err := Health(context.Background(), reader, managedResource(nil, ref("v1", "Service", "ns", "lb")), now)
	require.NoError(t, err)
	assert.Equal(t, "ServiceUnhealthy", condition.Reason)
	assert.Equal(t, `Service "ns/lb" is unhealthy: service is missing ingress status

-> Events:
* service-controller reported 60m ago: message e2
* service-controller reported 50m ago (x4 over 3h): message e3
* cloud-controller reported 45s ago: message e4
* service-controller reported <unknown> ago: message e5
* service-controller reported 20m ago: message e6`, condition.Message)

	// The events only add to the message: when they cannot be read, the verdict stands.
	failingList := fake.NewClientBuilder().WithScheme(targetScheme).WithObjects(loadBalancer).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("forbidden")
		},
	}).Build()
	condition, err = Health(context.Background(), failingList, managedResource(nil, ref("v1", "Service", "ns", "lb")), now)
	require.NoError(t, err)
	assert.Equal(t, `Service "ns/lb" is unhealthy: service is missing ingress status`, condition.Message)
}

func TestHealthReadErrors(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Thing"}, SearchedVersions: []string{"v1"}}
	getFails := func(err error) client.Reader {
		return fake.NewClientBuilder().WithScheme(targetScheme).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return err
			},
		}).Build()
	}
	mr := managedResource(nil, ref("example.com/v1", "Thing", "ns", "t"))

	condition, err := Health(context.Background(), getFails(noMatch), mr, now)
	require.NoError(t, err)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition.Status)
	assert.Equal(t, "ThingMissing", condition.Reason)
	assert.Equal(t, `Required Thing "t" in namespace "ns" is missing: no matches for kind "Thing" in version "example.com/v1"`, condition.Message)

	_, err = Health(context.Background(), getFails(apierrors.NewForbidden(schema.GroupResource{Resource: "things"}, "t", errors.New("no"))), mr, now)
	assert.True(t, apierrors.IsForbidden(err))

	badPrometheus := custom(PrometheusKind, 1, map[string]any{"replicas": "two"}, nil)
	_, err = Health(context.Background(), newReader(badPrometheus), managedResource(nil, ref("monitoring.coreos.com/v1", "Prometheus", "ns", "obj")), now)
	assert.ErrorContains(t, err, "decoding Prometheus")
}

// A v1beta1 CRD that does not convert cannot be checked: that is a HealthCheckError.
func TestHealthCheckError(t *testing.T) {
	reader := fake.NewClientBuilder().WithScheme(targetScheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			crd := obj.(*apiextensionsv1beta1.CustomResourceDefinition)
			crd.Name = key.Name
			crd.Spec.Validation = &apiextensionsv1beta1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1beta1.JSONSchemaProps{Default: &apiextensionsv1beta1.JSON{Raw: []byte("{")}}}
			return nil
		},
	}).Build()
	condition, err := Health(context.Background(), reader, managedResource(nil, ref("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "", "things.example.com")), now)
	require.NoError(t, err)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition.Status)
	assert.Equal(t, "HealthCheckError", condition.Reason)
	assert.Equal(t, `Error executing health check for CustomResourceDefinition "/things.example.com": unexpected end of JSON input`, condition.Message)
}

// The condition keeps its times while nothing changes, moves lastUpdateTime on a new message and
// lastTransitionTime on a new status, so that an unchanged verdict writes nothing.
func TestHealthConditionTimes(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	message := `Pod "ns/p" is unhealthy: pod is in invalid phase "Pending" (expected one of ["Running" "Succeeded"])`
	current := func(status gardencorev1beta1.ConditionStatus, reason, message string) []gardencorev1beta1.Condition {
		return []gardencorev1beta1.Condition{
			{Type: resourcesv1alpha1.ResourcesApplied, Status: gardencorev1beta1.ConditionTrue},
			{Type: resourcesv1alpha1.ResourcesHealthy, Status: status, Reason: reason, Message: message, LastTransitionTime: earlier, LastUpdateTime: earlier},
		}
	}
	for _, tc := range []struct {
		name                       string
		conditions                 []gardencorev1beta1.Condition
		wantTransition, wantUpdate metav1.Time
	}{
		{"unchanged", current(gardencorev1beta1.ConditionFalse, "PodUnhealthy", message), earlier, earlier},
		{"new message", current(gardencorev1beta1.ConditionFalse, "PodMissing", "gone"), earlier, metav1.NewTime(now)},
		{"new status", current(gardencorev1beta1.ConditionTrue, "ResourcesHealthy", "All resources are healthy."), metav1.NewTime(now), metav1.NewTime(now)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			condition, err := Health(context.Background(), newReader(pending), managedResource(tc.conditions, ref("v1", "Pod", "ns", "p")), now)
			require.NoError(t, err)
			assert.Equal(t, gardencorev1beta1.Condition{
				Type: resourcesv1alpha1.ResourcesHealthy, Status: gardencorev1beta1.ConditionFalse, Reason: "PodUnhealthy", Message: message,
				LastTransitionTime: tc.wantTransition, LastUpdateTime: tc.wantUpdate,
			}, condition)
		})
	}
}

func TestProgressing(t *testing.T) {
	app := map[string]string{"app": "web"}
	deployment := rolledOutDeployment("ns", "web", 1, app)
	pod := runningPod("ns", "web-1", app)
	oldPod := runningPod("ns", "web-0", app)
	statefulSet := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.StatefulSetStatus{UpdatedReplicas: 1}}
	prometheus := custom(PrometheusKind, 1, nil, nil)
	certificate := custom(CertificateKind, 2, nil, map[string]any{"observedGeneration": int64(1)})
	certificate.SetName("cert")
	podList := "LIST *v1.PodList typed ns=ns labels=app=web fields="

	for _, tc := range []struct {
		name         string
		objs         []client.Object
		refs         []resourcesv1alpha1.ObjectReference
		wantStatus   gardencorev1beta1.ConditionStatus
		wantReason   string
		wantMessage  string
		wantRequests []string
	}{
		{name: "no resources", wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ResourcesRolledOut", wantMessage: "All resources have been fully rolled out."},
		{name: "kinds and groups without rollouts are not read",
			refs: []resourcesv1alpha1.ObjectReference{ref("v1", "Pod", "ns", "p"), ref("apps/v1", "ReplicaSet", "ns", "rs"), ref("batch/v1", "Job", "ns", "j"),
				ref("example.com/v1", "Deployment", "ns", "web"), ref("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "ns", "vpa")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ResourcesRolledOut", wantMessage: "All resources have been fully rolled out."},
		{name: "rolled out, missing objects passed over, duplicates read once",
			objs: []client.Object{deployment, pod},
			refs: []resourcesv1alpha1.ObjectReference{ref("apps/v1", "Deployment", "ns", "web"), ref("apps/v1", "StatefulSet", "ns", "gone"),
				ref("monitoring.coreos.com/v1", "Alertmanager", "ns", "gone"), ref("apps/v1", "Deployment", "ns", "web")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ResourcesRolledOut", wantMessage: "All resources have been fully rolled out.",
			wantRequests: []string{"GET apps/v1/Deployment typed ns/web", podList, "GET apps/v1/StatefulSet typed ns/gone",
				"GET monitoring.coreos.com/v1/Alertmanager unstructured ns/gone"}},
		{name: "old pods remain",
			objs:       []client.Object{deployment, pod, oldPod, statefulSet},
			refs:       []resourcesv1alpha1.ObjectReference{ref("apps/v1", "Deployment", "ns", "web"), ref("apps/v1", "StatefulSet", "ns", "db")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "DeploymentProgressing", wantMessage: `Deployment "ns/web" is progressing: there are still non-terminated old pods`,
			wantRequests: []string{"GET apps/v1/Deployment typed ns/web", podList}},
		{name: "StatefulSet after a rolled out Deployment",
			objs:       []client.Object{deployment, pod, statefulSet},
			refs:       []resourcesv1alpha1.ObjectReference{ref("apps/v1", "Deployment", "ns", "web"), ref("apps/v1", "StatefulSet", "ns", "db")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "StatefulSetProgressing", wantMessage: `StatefulSet "ns/db" is progressing: 1 of 3 replica(s) have been updated`,
			wantRequests: []string{"GET apps/v1/Deployment typed ns/web", podList, "GET apps/v1/StatefulSet typed ns/db"}},
		{name: "skip-health-check",
			objs:       []client.Object{skipAnnotated(statefulSet.DeepCopy()), skipAnnotated(deployment.DeepCopy())},
			refs:       []resourcesv1alpha1.ObjectReference{ref("apps/v1", "StatefulSet", "ns", "db"), ref("apps/v1", "Deployment", "ns", "web")},
			wantStatus: gardencorev1beta1.ConditionFalse, wantReason: "ResourcesRolledOut", wantMessage: "All resources have been fully rolled out.",
			wantRequests: []string{"GET apps/v1/StatefulSet typed ns/db", "GET apps/v1/Deployment typed ns/web"}},
		{name: "Prometheus",
			objs:       []client.Object{prometheus},
			refs:       []resourcesv1alpha1.ObjectReference{ref("monitoring.coreos.com/v1", "Prometheus", "ns", "obj")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "PrometheusProgressing", wantMessage: `Prometheus "ns/obj" is progressing: condition "Reconciled" is missing`,
			wantRequests: []string{"GET monitoring.coreos.com/v1/Prometheus unstructured ns/obj"}},
		{name: "the kind picks the object read, in its known version",
			objs:       []client.Object{certificate, statefulSet},
			refs:       []resourcesv1alpha1.ObjectReference{ref("apps/v1beta2", "StatefulSet", "ns", "gone"), ref("monitoring.coreos.com/v1", "Certificate", "ns", "cert")},
			wantStatus: gardencorev1beta1.ConditionTrue, wantReason: "CertificateProgressing", wantMessage: `Certificate "ns/cert" is progressing: observed generation outdated (1/2)`,
			wantRequests: []string{"GET apps/v1/StatefulSet typed ns/gone", "GET cert.gardener.cloud/v1alpha1/Certificate unstructured ns/cert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newReader(tc.objs...)
			condition, err := Progressing(context.Background(), reader, managedResource(nil, tc.refs...), now)
			require.NoError(t, err)
			assert.Equal(t, gardencorev1beta1.Condition{
				Type: resourcesv1alpha1.ResourcesProgressing, Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMessage,
				LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now),
			}, condition)
			assert.Equal(t, tc.wantRequests, reader.requests)
		})
	}
}

func TestProgressingErrors(t *testing.T) {
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "monitoring.coreos.com", Kind: "Prometheus"}, SearchedVersions: []string{"v1"}}
	reader := func(getErr, listErr error) client.Reader {
		return fake.NewClientBuilder().WithScheme(targetScheme).WithObjects(rolledOutDeployment("ns", "web", 1, nil)).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if getErr != nil {
					return getErr
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return listErr },
		}).Build()
	}

	// An API the target does not serve has no objects to roll out.
	condition, err := Progressing(context.Background(), reader(noMatch, nil), managedResource(nil, ref("monitoring.coreos.com/v1", "Prometheus", "ns", "p")), now)
	require.NoError(t, err)
	assert.Equal(t, "ResourcesRolledOut", condition.Reason)

	_, err = Progressing(context.Background(), reader(errors.New("timeout"), nil), managedResource(nil, ref("apps/v1", "Deployment", "ns", "web")), now)
	assert.EqualError(t, err, "timeout")

	_, err = Progressing(context.Background(), reader(nil, errors.New("list failed")), managedResource(nil, ref("apps/v1", "Deployment", "ns", "web")), now)
	assert.EqualError(t, err, "list failed")
}
