// Package checks decides gardener-resource-manager's health controller for one ManagedResource:
// its ResourcesHealthy condition (the "health" reconciler) and its ResourcesProgressing
// condition (the "health-progressing" reconciler), from the objects of the MR's
// .status.resources in the target cluster. The verdicts, reasons and messages are Gardener's,
// so that conditions do not flap when a ManagedResource moves between Gardener's controller and
// this one.
package checks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	resourcemanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Reasons and messages of the conditions this package computes.
const (
	ReasonResourcesHealthy    = "ResourcesHealthy"
	MessageResourcesHealthy   = "All resources are healthy."
	ReasonHealthCheckError    = "HealthCheckError"
	ReasonResourcesRolledOut  = "ResourcesRolledOut"
	MessageResourcesRolledOut = "All resources have been fully rolled out."
	// The reasons of a missing, unhealthy or progressing object are its kind with one of these
	// suffixes, e.g. DeploymentMissing.
	ReasonSuffixMissing     = "Missing"
	ReasonSuffixUnhealthy   = "Unhealthy"
	ReasonSuffixProgressing = "Progressing"
)

// ShouldCheck tells whether the controller of resourceClass ("" is the default class) checks
// mr at all. It does not check a ManagedResource that is ignored
// (resources.gardener.cloud/ignore with a value strconv.ParseBool takes as true), of another
// class, or being deleted; nor one whose ResourcesApplied condition is missing, Progressing or
// False: until the resources have been applied successfully, the objects may legitimately be
// missing (CRDs and their custom resources in one MR take two tries) and conditions computed
// from them would be wrong. ResourcesApplied True or Unknown allows the checks.
func ShouldCheck(mr *resourcesv1alpha1.ManagedResource, resourceClass string) bool {
	if ignored, _ := strconv.ParseBool(mr.Annotations[resourcesv1alpha1.Ignore]); ignored {
		return false
	}
	if !responsible(mr, resourceClass) || !mr.DeletionTimestamp.IsZero() {
		return false
	}
	applied := function.GetCondition(mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)
	return applied != nil && applied.Status != gardencorev1beta1.ConditionProgressing && applied.Status != gardencorev1beta1.ConditionFalse
}

// responsible is Gardener's class filter: the "*" class takes every ManagedResource, the
// default class also those without a class.
func responsible(mr *resourcesv1alpha1.ManagedResource, resourceClass string) bool {
	if resourceClass == "" {
		resourceClass = resourcemanagerconfigv1alpha1.DefaultResourceClass
	}
	if resourceClass == resourcemanagerconfigv1alpha1.AllResourceClass {
		return true
	}
	class := ptr.Deref(mr.Spec.Class, "")
	return class == resourceClass || (class == "" && resourceClass == resourcemanagerconfigv1alpha1.DefaultResourceClass)
}

// readKey identifies one read, so that an object listed twice in .status.resources is read
// once: the first read already decided its outcome.
type readKey struct {
	gvk schema.GroupVersionKind
	key client.ObjectKey
}

// objectFor is the object a read of gvk decodes into: typed for the built-in kinds with a check,
// unstructured for the custom kinds with one, and metadata-only for everything else, of which
// only the existence matters.
func objectFor(gvk schema.GroupVersionKind) client.Object {
	if newObj, ok := builtinKinds[gvk]; ok {
		return newObj()
	}
	if _, ok := customHealthChecks[gvk]; ok {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// Health computes mr's ResourcesHealthy condition at now from the objects of .status.resources
// in the target cluster, in their order; the first missing or unhealthy object decides:
//
//   - missing (NotFound, or no such kind: NoMatch): False, <Kind>Missing,
//     `Required <Kind> "<name>" in namespace "<namespace>" is missing` (+ ": <error>" on NoMatch);
//   - unhealthy: False, <Kind>Unhealthy, `<Kind> "<namespace>/<name>" is unhealthy: <why>`;
//     for a v1 Service, the last five Warning events about it are appended;
//   - not checkable (a v1beta1 CRD that does not convert): False, HealthCheckError,
//     `Error executing health check for <Kind> "<namespace>/<name>": <error>`;
//   - otherwise True, ResourcesHealthy, "All resources are healthy.".
//
// Objects with the skip-health-check annotation and kinds without a check only have to exist.
// Call it only when ShouldCheck(mr, ...) holds. The result is the condition to merge into
// mr.Status.Conditions; it equals the current one when nothing changed. An error (a read that
// failed otherwise, or a custom object that does not decode) leaves the condition as it is.
//
// API reads, through target: per distinct entry of .status.resources up to the first failing
// one, one GET: typed for the kinds of CheckHealth's typed checks (apiextensions.k8s.io/v1 and
// v1beta1 CustomResourceDefinition, apps/v1 DaemonSet, Deployment, ReplicaSet, StatefulSet,
// batch/v1 Job, v1 Pod, ReplicationController, Service; target's scheme must know them),
// unstructured for the custom kinds (PrometheusKind, AlertmanagerKind,
// VerticalPodAutoscalerKind, CertificateKind, IssuerKind), metadata-only
// (PartialObjectMetadata) for every other kind. When a v1 Service is unhealthy, one LIST of
// Events (typed) in its namespace by the field selector involvedObject.apiVersion=v1,
// involvedObject.kind=Service, involvedObject.name, involvedObject.namespace and type=Warning;
// a failure of that LIST only drops the events from the message.
func Health(ctx context.Context, target client.Reader, mr *resourcesv1alpha1.ManagedResource, now time.Time) (gardencorev1beta1.Condition, error) {
	condition := function.GetOrInitCondition(now, mr.Status.Conditions, resourcesv1alpha1.ResourcesHealthy)
	unhealthy := func(reason, message string) (gardencorev1beta1.Condition, error) {
		return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionFalse, reason, message), nil
	}

	read := map[readKey]bool{}
	for _, ref := range mr.Status.Resources {
		gvk, key := ref.GroupVersionKind(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
		if read[readKey{gvk, key}] {
			continue
		}
		read[readKey{gvk, key}] = true

		obj := objectFor(gvk)
		if err := target.Get(ctx, key, obj); err != nil {
			if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
				return gardencorev1beta1.Condition{}, err
			}
			message := fmt.Sprintf("Required %s %q in namespace %q is missing", ref.Kind, ref.Name, ref.Namespace)
			if meta.IsNoMatchError(err) {
				message = fmt.Sprintf("%s: %v", message, err)
			}
			return unhealthy(ref.Kind+ReasonSuffixMissing, message)
		}

		checked, err := CheckHealth(obj)
		if err == nil {
			continue
		}
		if !checked {
			var undecodable *decodeError
			if errors.As(err, &undecodable) {
				return gardencorev1beta1.Condition{}, err
			}
			return unhealthy(ReasonHealthCheckError, fmt.Sprintf("Error executing health check for %s %q: %v", ref.Kind, key.String(), err))
		}
		message := fmt.Sprintf("%s %q is unhealthy: %v", ref.Kind, key.String(), err)
		if svc, ok := obj.(*corev1.Service); ok {
			if events := serviceWarnings(ctx, target, svc, now); events != "" {
				message += "\n\n" + events
			}
		}
		return unhealthy(ref.Kind+ReasonSuffixUnhealthy, message)
	}
	return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionTrue, ReasonResourcesHealthy, MessageResourcesHealthy), nil
}

// maxServiceEvents bounds the events quoted in a message: the most recent ones tell why a load
// balancer is not there.
const maxServiceEvents = 5

// serviceWarnings renders the most recent Warning events about svc, oldest first, the way
// Gardener appends them to the message ("" when there are none or they cannot be read). Ages are
// relative to now.
func serviceWarnings(ctx context.Context, target client.Reader, svc *corev1.Service, now time.Time) string {
	events := &corev1.EventList{}
	if err := target.List(ctx, events, client.InNamespace(svc.Namespace), client.MatchingFields{
		"involvedObject.apiVersion": "v1",
		"involvedObject.kind":       "Service",
		"involvedObject.name":       svc.Name,
		"involvedObject.namespace":  svc.Namespace,
		"type":                      corev1.EventTypeWarning,
	}); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Reading the events of an unhealthy Service failed", "service", client.ObjectKeyFromObject(svc))
		return ""
	}
	if len(events.Items) == 0 {
		return ""
	}
	items := events.Items
	sort.SliceStable(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
	if len(items) > maxServiceEvents {
		items = items[len(items)-maxServiceEvents:]
	}
	age := func(t time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t))
	}
	var b strings.Builder
	b.WriteString("-> Events:")
	for _, e := range items {
		var interval string
		switch {
		case e.Count > 1:
			interval = fmt.Sprintf("%s ago (x%d over %s)", age(e.LastTimestamp.Time), e.Count, age(e.FirstTimestamp.Time))
		case e.FirstTimestamp.IsZero():
			interval = age(e.EventTime.Time) + " ago"
		default:
			interval = age(e.FirstTimestamp.Time) + " ago"
		}
		source := e.Source.Component
		if source == "" {
			source = e.ReportingController
		}
		fmt.Fprintf(&b, "\n* %s reported %s: %s", source, interval, e.Message)
	}
	return b.String()
}

// progressingGroups are the API groups whose objects may be progressing; other entries of
// .status.resources are passed over without a read.
var progressingGroups = map[string]bool{appsv1.GroupName: true, "monitoring.coreos.com": true, "cert.gardener.cloud": true}

// progressingKinds maps a kind of those groups to the object read for it. Like Gardener, the kind
// alone picks it (and its version): the group only has to be one of progressingGroups.
var progressingKinds = map[string]schema.GroupVersionKind{
	"Deployment":          appsv1.SchemeGroupVersion.WithKind("Deployment"),
	"StatefulSet":         appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	"DaemonSet":           appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	PrometheusKind.Kind:   PrometheusKind,
	AlertmanagerKind.Kind: AlertmanagerKind,
	CertificateKind.Kind:  CertificateKind,
	IssuerKind.Kind:       IssuerKind,
}

// Progressing computes mr's ResourcesProgressing condition at now from the objects of
// .status.resources in the target cluster, in their order. The first progressing object (see
// CheckProgressing) makes it True, <Kind>Progressing,
// `<Kind> "<namespace>/<name>" is progressing: <why>`; otherwise it is False,
// ResourcesRolledOut, "All resources have been fully rolled out.". Missing objects are passed
// over: they are the ResourcesHealthy condition's business.
//
// Call it only when ShouldCheck(mr, ...) holds. The result is the condition to merge into
// mr.Status.Conditions; it equals the current one when nothing changed. An error (a failed read
// other than NotFound/NoMatch, an object that does not decode) leaves the condition as it is.
//
// API reads, through target, up to the first progressing object: per distinct entry whose group
// is apps, monitoring.coreos.com or cert.gardener.cloud and whose kind is Deployment,
// StatefulSet, DaemonSet (one typed apps/v1 GET), Prometheus, Alertmanager (one unstructured
// monitoring.coreos.com/v1 GET), Certificate or Issuer (one unstructured
// cert.gardener.cloud/v1alpha1 GET); plus CheckProgressing's Pod LIST for each Deployment that
// exists, has no skip-health-check annotation and whose status says it is rolled out.
func Progressing(ctx context.Context, target client.Reader, mr *resourcesv1alpha1.ManagedResource, now time.Time) (gardencorev1beta1.Condition, error) {
	condition := function.GetOrInitCondition(now, mr.Status.Conditions, resourcesv1alpha1.ResourcesProgressing)

	read := map[readKey]bool{}
	for _, ref := range mr.Status.Resources {
		gvk, ok := progressingKinds[ref.Kind]
		if !ok || !progressingGroups[ref.GroupVersionKind().Group] {
			continue
		}
		key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
		if read[readKey{gvk, key}] {
			continue
		}
		read[readKey{gvk, key}] = true

		obj := objectFor(gvk)
		if err := target.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue
			}
			return gardencorev1beta1.Condition{}, err
		}
		progressing, description, err := CheckProgressing(ctx, target, obj)
		if err != nil {
			return gardencorev1beta1.Condition{}, err
		}
		if progressing {
			return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionTrue, ref.Kind+ReasonSuffixProgressing,
				fmt.Sprintf("%s %q is progressing: %s", ref.Kind, key.String(), description)), nil
		}
	}
	return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionFalse, ReasonResourcesRolledOut, MessageResourcesRolledOut), nil
}
