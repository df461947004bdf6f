package required

import (
	"context"
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// extensionKind is one extension kind gardenlet looks at, and how to list it typed.
type extensionKind struct {
	kind    function.Kind
	newList func() client.ObjectList
}

// extensionKinds are the kinds gardenlet's required controller watches on the seed.
var extensionKinds = []extensionKind{
	{kinds.ExtensionsBackupBucket, func() client.ObjectList { return &extensionsv1alpha1.BackupBucketList{} }},
	{kinds.ExtensionsBackupEntry, func() client.ObjectList { return &extensionsv1alpha1.BackupEntryList{} }},
	{kinds.ExtensionsBastion, func() client.ObjectList { return &extensionsv1alpha1.BastionList{} }},
	{kinds.ExtensionsContainerRuntime, func() client.ObjectList { return &extensionsv1alpha1.ContainerRuntimeList{} }},
	{kinds.ExtensionsControlPlane, func() client.ObjectList { return &extensionsv1alpha1.ControlPlaneList{} }},
	{kinds.ExtensionsDNSRecord, func() client.ObjectList { return &extensionsv1alpha1.DNSRecordList{} }},
	{kinds.ExtensionsExtension, func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} }},
	{kinds.ExtensionsInfrastructure, func() client.ObjectList { return &extensionsv1alpha1.InfrastructureList{} }},
	{kinds.ExtensionsNetwork, func() client.ObjectList { return &extensionsv1alpha1.NetworkList{} }},
	{kinds.ExtensionsOperatingSystemConfig, func() client.ObjectList { return &extensionsv1alpha1.OperatingSystemConfigList{} }},
	{kinds.ExtensionsSelfHostedShootExposure, func() client.ObjectList { return &extensionsv1alpha1.SelfHostedShootExposureList{} }},
	{kinds.ExtensionsWorker, func() client.ObjectList { return &extensionsv1alpha1.WorkerList{} }},
}

// SeedLists are the sweep's lists of the seed: every extension kind, in full (the decision
// reads spec.type and spec.class), one LIST each.
func SeedLists() []function.List {
	lists := make([]function.List, 0, len(extensionKinds))
	for _, k := range extensionKinds {
		lists = append(lists, function.List{Kind: k.kind, Cluster: function.Target})
	}
	return lists
}

// Reconciler sets the Required condition of the installations of one seed.
type Reconciler struct {
	SeedName string
	// Source is the garden, Target the seed.
	Source, Target function.ClusterClient
	Clock          clock.PassiveClock
}

// New builds the reconciler for the installations of seedName.
func New(deps function.Deps, seedName string) *Reconciler {
	return &Reconciler{SeedName: seedName, Source: deps.Source, Target: deps.Target, Clock: deps.Clock}
}

// Reconcile decides the installation's Required condition from its registration and the
// extension objects on the seed: during a sweep from the sweep's lists of the seed, otherwise
// with one LIST per extension kind on the seed.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	ci := &gardencorev1beta1.ControllerInstallation{}
	if err := req.Reader.Get(ctx, req.Key, ci); err != nil {
		return err
	}
	if ci.Spec.SeedRef == nil || ci.Spec.SeedRef.Name != r.SeedName {
		return nil // another seed's gardenlet decides it
	}
	registration := &gardencorev1beta1.ControllerRegistration{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: ci.Spec.RegistrationRef.Name}, registration); err != nil {
		return fmt.Errorf("reading ControllerRegistration %s: %w", ci.Spec.RegistrationRef.Name, err)
	}
	// The seed is read live for events, from the sweep's lists on it during a sweep.
	seedReader := req.Target
	existing, err := readTypes(ctx, seedReader, registration.Spec.Resources)
	if err != nil {
		return err
	}
	decision, ok := Decide(registration.Spec.Resources, existing)
	if !ok {
		return nil // a kind gardenlet does not know: nothing can be said, as in gardenlet
	}
	_, err = r.Source.Writer.PatchStatus(ctx, ci, func() {
		ci.Status.Conditions = function.SetCondition(r.Clock, ci.Status.Conditions, gardencorev1beta1.ControllerInstallationRequired,
			decision.Status(), decision.Reason(), decision.Message)
	})
	if apierrors.IsNotFound(err) {
		return nil // gone meanwhile
	}
	return err
}

// readTypes lists the extension kinds among resources and returns the types that make a
// controller required, per kind read. Kinds gardenlet does not look at stay unread.
func readTypes(ctx context.Context, reader client.Reader, resources []gardencorev1beta1.ControllerResource) (TypesByKind, error) {
	existing := TypesByKind{}
	for _, k := range extensionKinds {
		if !serves(resources, k.kind.Kind) {
			continue
		}
		list := k.newList()
		if err := reader.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %s on the seed: %w", k.kind.Resource, err)
		}
		var objects []extensionsv1alpha1.Object
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(extensionsv1alpha1.Object)
			if !ok {
				return fmt.Errorf("%T is not an extension object", o)
			}
			objects = append(objects, obj)
			return nil
		}); err != nil {
			return nil, err
		}
		existing[k.kind.Kind] = RequiringTypes(objects)
	}
	return existing, nil
}

func serves(resources []gardencorev1beta1.ControllerResource, kind string) bool {
	for _, r := range resources {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
