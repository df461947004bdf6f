// Package runtime is gardener-operator's extension-required-runtime reconciler: an Extension's
// RequiredRuntime condition says for which kinds the garden runtime cluster needs the extension,
// because extension objects of class "garden" of a kind and type it supports exist there
// (BackupBuckets, BackupEntries, DNSRecords, Extensions), or because an Extension auto-enables
// an Extension type it supports for the garden.
package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler in the extension function.
const ReconcilerName = "required-runtime"

// SweepName names its sweep.
const SweepName = "required-runtime"

// The RequiredRuntime condition's reasons and messages, as gardener-operator's.
const (
	ReasonRequired     = "ExtensionRequired"
	ReasonNotRequired  = "ExtensionNotRequired"
	MessageNotRequired = "Extension not required for any kind"
)

// runtimeKinds are the extension kinds gardener-operator looks for in the runtime cluster, each
// with a way to list it and read its objects' class and type.
var runtimeKinds = []struct {
	kind    function.Kind
	newList func() client.ObjectList
	each    func(client.ObjectList, func(extensionsv1alpha1.DefaultSpec))
}{
	{kinds.ExtensionsBackupBucket, func() client.ObjectList { return &extensionsv1alpha1.BackupBucketList{} }, func(l client.ObjectList, f func(extensionsv1alpha1.DefaultSpec)) {
		for _, o := range l.(*extensionsv1alpha1.BackupBucketList).Items {
			f(o.Spec.DefaultSpec)
		}
	}},
	{kinds.ExtensionsBackupEntry, func() client.ObjectList { return &extensionsv1alpha1.BackupEntryList{} }, func(l client.ObjectList, f func(extensionsv1alpha1.DefaultSpec)) {
		for _, o := range l.(*extensionsv1alpha1.BackupEntryList).Items {
			f(o.Spec.DefaultSpec)
		}
	}},
	{kinds.ExtensionsDNSRecord, func() client.ObjectList { return &extensionsv1alpha1.DNSRecordList{} }, func(l client.ObjectList, f func(extensionsv1alpha1.DefaultSpec)) {
		for _, o := range l.(*extensionsv1alpha1.DNSRecordList).Items {
			f(o.Spec.DefaultSpec)
		}
	}},
	{kinds.ExtensionsExtension, func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} }, func(l client.ObjectList, f func(extensionsv1alpha1.DefaultSpec)) {
		for _, o := range l.(*extensionsv1alpha1.ExtensionList).Items {
			f(o.Spec.DefaultSpec)
		}
	}},
}

// Watches are the reconciler's events: a new or changed Extension, and the creation or deletion
// of an extension object of class "garden" (class and type are immutable, so their updates
// cannot change what is required), mapped to the Extensions that support its kind and type.
func Watches() []function.Watch {
	watches := []function.Watch{{Kind: kinds.Extension, Cluster: function.Target, Reconciler: ReconcilerName, Predicate: ExtensionPredicate}}
	for _, k := range runtimeKinds {
		watches = append(watches, function.Watch{Kind: k.kind, Cluster: function.Target, Reconciler: ReconcilerName, Predicate: GardenObjectPredicate, Map: MapToSupportingExtensions})
	}
	return watches
}

// Sweeps is the resync: every Extension against one LIST of each runtime kind and of the
// Extensions (for the auto-enabled ones).
func Sweeps() []function.Sweep {
	related := []function.List{{Kind: kinds.Extension, Cluster: function.Target}}
	for _, k := range runtimeKinds {
		related = append(related, function.List{Kind: k.kind, Cluster: function.Target})
	}
	return []function.Sweep{{
		Name: SweepName, Schedule: "*/10 * * * *", Reconciler: ReconcilerName,
		Primary: function.List{Kind: kinds.Extension, Cluster: function.Target}, Related: related,
	}}
}

// TargetRBAC is what the reconciler does in the runtime cluster; it reads nothing in the garden.
var TargetRBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{extensionsv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"backupbuckets", "backupentries", "dnsrecords", "extensions"}, Verbs: []string{"list"}},
}

// ExtensionPredicate passes an Extension whose spec may have changed (its status has not caught
// up with its generation, as after a creation or a spec change) or that has no RequiredRuntime
// condition yet: gardener-operator's GenerationChangedPredicate, as far as one event tells.
func ExtensionPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil || ev.Created {
		return true
	}
	observed, _, _ := unstructured.NestedInt64(ev.Object.Object, "status", "observedGeneration")
	conditions, _, _ := unstructured.NestedSlice(ev.Object.Object, "status", "conditions")
	hasCondition := slices.ContainsFunc(conditions, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == string(operatorv1alpha1.ExtensionRequiredRuntime)
	})
	return !hasCondition || observed != ev.Object.GetGeneration()
}

// GardenObjectPredicate passes the creation and deletion of extension objects of class garden.
func GardenObjectPredicate(ev function.Event) bool {
	if ev.Object == nil || (!ev.Created && !ev.Deleted) {
		return false
	}
	class, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "class")
	return class == string(extensionsv1alpha1.ExtensionClassGarden)
}

// MapToSupportingExtensions maps an extension object's event to the Extensions that support its
// kind and type: one LIST of Extensions.
func MapToSupportingExtensions(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	typ, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "type")
	list := &operatorv1alpha1.ExtensionList{}
	if err := reader.List(ctx, list); err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, ext := range list.Items {
		if supports(ext.Spec.Resources, ev.Kind.Kind, typ) {
			keys = append(keys, function.Key{Name: ext.Name})
		}
	}
	return keys, nil
}

// supports is Gardener's IsResourceSupported: kind and (case-insensitively) type.
func supports(resources []gardencorev1beta1.ControllerResource, kind, typ string) bool {
	return slices.ContainsFunc(resources, func(r gardencorev1beta1.ControllerResource) bool {
		return r.Kind == kind && strings.EqualFold(r.Type, typ)
	})
}

// RequiredKinds are the kinds the Extension is required for in the runtime cluster, sorted:
// those of which an object of class garden has a type it supports (gardenTypes: kind → types),
// and "Extension" if any Extension auto-enables for the garden an Extension type it supports.
// gardener-operator adds what its Garden requires (backup, DNS, extensions); this project has no
// Garden object.
func RequiredKinds(ext *operatorv1alpha1.Extension, gardenTypes map[string]sets.Set[string], all []operatorv1alpha1.Extension) []string {
	required := sets.New[string]()
	for _, resource := range ext.Spec.Resources {
		if gardenTypes[resource.Kind].Has(resource.Type) {
			required.Insert(resource.Kind)
		}
	}
	for _, other := range all {
		for _, resource := range other.Spec.Resources {
			if resource.Kind == extensionsv1alpha1.ExtensionResource && slices.Contains(resource.AutoEnable, operatorv1alpha1.ClusterTypeGarden) &&
				supports(ext.Spec.Resources, extensionsv1alpha1.ExtensionResource, resource.Type) {
				required.Insert(extensionsv1alpha1.ExtensionResource)
			}
		}
	}
	return sets.List(required)
}

// New builds the reconciler.
var New = required.NewReconciler(operatorv1alpha1.ExtensionRequiredRuntime, decide)

// decide reads the objects of the runtime kinds the Extension supports and all Extensions, all in
// the runtime cluster.
func decide(ctx context.Context, req function.Request, ext *operatorv1alpha1.Extension) (required.Verdict, error) {
	reader := req.Reader
	gardenTypes := map[string]sets.Set[string]{}
	for _, k := range runtimeKinds {
		if !slices.ContainsFunc(ext.Spec.Resources, func(r gardencorev1beta1.ControllerResource) bool { return r.Kind == k.kind.Kind }) {
			continue // no need to look
		}
		list := k.newList()
		if err := reader.List(ctx, list); err != nil {
			return required.Verdict{}, fmt.Errorf("failed to list %s objects: %w", k.kind.Kind, err)
		}
		types := sets.New[string]()
		k.each(list, func(spec extensionsv1alpha1.DefaultSpec) {
			if ptr.Deref(spec.Class, extensionsv1alpha1.ExtensionClassShoot) == extensionsv1alpha1.ExtensionClassGarden {
				types.Insert(spec.Type)
			}
		})
		gardenTypes[k.kind.Kind] = types
	}
	all := &operatorv1alpha1.ExtensionList{}
	if err := reader.List(ctx, all); err != nil {
		return required.Verdict{}, fmt.Errorf("failed to retrieve extensions: %w", err)
	}
	if requiredKinds := RequiredKinds(ext, gardenTypes, all.Items); len(requiredKinds) > 0 {
		return required.Verdict{Status: gardencorev1beta1.ConditionTrue, Reason: ReasonRequired, Message: fmt.Sprintf("Extension required for kinds %s", requiredKinds)}, nil
	}
	return required.Verdict{Status: gardencorev1beta1.ConditionFalse, Reason: ReasonNotRequired, Message: MessageNotRequired}, nil
}
