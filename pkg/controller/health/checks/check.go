package checks

import (
	"context"
	"errors"
	"fmt"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// builtinKinds are the built-in kinds with a dedicated health check, in the only versions that
// have one: gardener-resource-manager checks the typed object it decodes, and decodes only what
// its scheme registers, so apps/v1beta2 Deployments and the like merely have to exist.
var builtinKinds = map[schema.GroupVersionKind]func() client.Object{
	apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"):      func() client.Object { return &apiextensionsv1.CustomResourceDefinition{} },
	apiextensionsv1beta1.SchemeGroupVersion.WithKind("CustomResourceDefinition"): func() client.Object { return &apiextensionsv1beta1.CustomResourceDefinition{} },
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):                              func() client.Object { return &appsv1.DaemonSet{} },
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                             func() client.Object { return &appsv1.Deployment{} },
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):                             func() client.Object { return &appsv1.ReplicaSet{} },
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):                            func() client.Object { return &appsv1.StatefulSet{} },
	batchv1.SchemeGroupVersion.WithKind("Job"):                                   func() client.Object { return &batchv1.Job{} },
	corev1.SchemeGroupVersion.WithKind("Pod"):                                    func() client.Object { return &corev1.Pod{} },
	corev1.SchemeGroupVersion.WithKind("ReplicationController"):                  func() client.Object { return &corev1.ReplicationController{} },
	corev1.SchemeGroupVersion.WithKind("Service"):                                func() client.Object { return &corev1.Service{} },
}

// customHealthChecks are the custom kinds with a dedicated health check.
var customHealthChecks = map[schema.GroupVersionKind]func(*unstructured.Unstructured) error{
	PrometheusKind:            CheckPrometheus,
	AlertmanagerKind:          CheckAlertmanager,
	VerticalPodAutoscalerKind: CheckVerticalPodAutoscaler,
	CertificateKind:           CheckCertificate,
	IssuerKind:                CheckIssuer,
}

// customProgressingChecks are the custom kinds whose rollout is tracked.
var customProgressingChecks = map[schema.GroupVersionKind]func(*unstructured.Unstructured) (bool, string, error){
	PrometheusKind:   PrometheusProgressing,
	AlertmanagerKind: AlertmanagerProgressing,
	CertificateKind:  CertificateProgressing,
	IssuerKind:       IssuerProgressing,
}

// skipped tells whether the object opted out of health and rollout checks; only the exact value
// "true" opts out.
func skipped(obj client.Object) bool {
	return obj.GetAnnotations()[resourcesv1alpha1.SkipHealthCheck] == "true"
}

// asTyped returns the typed form of an unstructured built-in kind that has a check, so that a
// caller holding unstructured objects gets the same verdict.
func asTyped(u *unstructured.Unstructured) (client.Object, error) {
	newObj, ok := builtinKinds[u.GroupVersionKind()]
	if !ok {
		return u, nil
	}
	typed := newObj()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, &decodeError{fmt.Errorf("decoding %s %q: %w", u.GetKind(), u.GetName(), err)}
	}
	return typed, nil
}

// crdConversion converts v1beta1 CRDs to v1 (through the internal version, the only way the
// conversion functions go), so that both versions share one check.
var crdConversion = func() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}()

func crdV1(crd *apiextensionsv1beta1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := crdConversion.Convert(crd, internal, nil); err != nil {
		return nil, err
	}
	out := &apiextensionsv1.CustomResourceDefinition{}
	if err := crdConversion.Convert(internal, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckHealth runs the object's dedicated health check. checked is false when the object has
// none (an unknown kind or version: it is healthy by existing), opted out with the
// skip-health-check annotation, or could not be checked; err is then set only in the last case
// (an object that does not decode, or a v1beta1 CRD that does not convert). When checked, err is
// why the object is unhealthy.
//
// Built-in kinds are checked as typed objects or unstructured; the custom kinds
// (PrometheusKind, AlertmanagerKind, VerticalPodAutoscalerKind, CertificateKind, IssuerKind)
// only unstructured. It makes no API request.
func CheckHealth(obj client.Object) (checked bool, err error) {
	if skipped(obj) {
		return false, nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if check, ok := customHealthChecks[u.GroupVersionKind()]; ok {
			err := check(u)
			var undecodable *decodeError
			return !errors.As(err, &undecodable), err
		}
		if obj, err = asTyped(u); err != nil {
			return false, err
		}
	}
	switch o := obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		return true, CheckCustomResourceDefinition(o)
	case *apiextensionsv1beta1.CustomResourceDefinition:
		crd, err := crdV1(o)
		if err != nil {
			return false, err
		}
		return true, CheckCustomResourceDefinition(crd)
	case *appsv1.DaemonSet:
		return true, CheckDaemonSet(o)
	case *appsv1.Deployment:
		return true, CheckDeployment(o)
	case *batchv1.Job:
		return true, CheckJob(o)
	case *corev1.Pod:
		return true, CheckPod(o)
	case *appsv1.ReplicaSet:
		return true, CheckReplicaSet(o)
	case *corev1.ReplicationController:
		return true, CheckReplicationController(o)
	case *corev1.Service:
		return true, CheckService(o)
	case *appsv1.StatefulSet:
		return true, CheckStatefulSet(o)
	}
	return false, nil
}

// oldPodsRemain is the description of a Deployment whose status claims to be rolled out while
// pods beyond .spec.replicas (typically those of an older ReplicaSet) still run or terminate.
const oldPodsRemain = "there are still non-terminated old pods"

// CheckProgressing tells whether the object's rollout is still under way, and why. Only apps/v1
// Deployments, StatefulSets and DaemonSets (typed or unstructured) and unstructured Prometheuses,
// Alertmanagers, Certificates and Issuers of the custom kinds' versions are tracked; any other
// object, and one with the skip-health-check annotation, is not progressing. err reports an
// object that does not decode or a failed read.
//
// API reads: for a Deployment whose status says it is rolled out, one LIST of Pods (typed) in its
// namespace by its .spec.selector.matchLabels, to count the pods still alive; none otherwise. A
// sweep's target reader answers it from one LIST per namespace (the health function's sweep
// lists Pods on demand). Like Gardener, the selector's matchExpressions are not applied.
func CheckProgressing(ctx context.Context, target client.Reader, obj client.Object) (progressing bool, description string, err error) {
	if skipped(obj) {
		return false, "", nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if check, ok := customProgressingChecks[u.GroupVersionKind()]; ok {
			return check(u)
		}
		if obj, err = asTyped(u); err != nil {
			return false, "", err
		}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if progressing, description := DeploymentProgressing(o); progressing {
			return true, description, nil
		}
		pods := &corev1.PodList{}
		var matchLabels map[string]string
		if o.Spec.Selector != nil {
			matchLabels = o.Spec.Selector.MatchLabels
		}
		if err := target.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels(matchLabels)); err != nil {
			return false, "", err
		}
		if !DeploymentHasExactPodCount(o, pods.Items) {
			return true, oldPodsRemain, nil
		}
		return false, "Deployment is fully rolled out", nil
	case *appsv1.StatefulSet:
		progressing, description := StatefulSetProgressing(o)
		return progressing, description, nil
	case *appsv1.DaemonSet:
		progressing, description := DaemonSetProgressing(o)
		return progressing, description, nil
	}
	return false, "", nil
}
