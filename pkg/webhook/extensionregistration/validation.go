package extensionregistration

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var (
	availablePolicies = sets.New(
		gardencorev1beta1.ControllerDeploymentPolicyOnDemand,
		gardencorev1beta1.ControllerDeploymentPolicyAlways,
		gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots,
	)
	availableStrategies             = sets.New(gardencorev1beta1.BeforeKubeAPIServer, gardencorev1beta1.AfterKubeAPIServer)
	availableStrategiesForReconcile = availableStrategies.Clone().Insert(gardencorev1beta1.AfterWorker)

	// registrationClusterTypes are the cluster types a ControllerRegistration's resources may
	// name; an Extension's may also name the garden.
	registrationClusterTypes = []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot, gardencorev1beta1.ClusterTypeSeed}
	extensionClusterTypes    = []gardencorev1beta1.ClusterType{operatorv1alpha1.ClusterTypeGarden, gardencorev1beta1.ClusterTypeSeed, gardencorev1beta1.ClusterTypeShoot}
)

// extensionsID is Gardener's "<kind>/<type>".
func extensionsID(kind, typ string) string { return kind + "/" + typ }

// isPrimary is Gardener's reading of a defaulted primary field.
func isPrimary(r gardencorev1beta1.ControllerResource) bool { return r.Primary == nil || *r.Primary }

// ValidateControllerRegistration is gardener-apiserver's validation of a ControllerRegistration
// (defaulted as gardener-apiserver defaults it before validating).
func ValidateControllerRegistration(r *gardencorev1beta1.ControllerRegistration) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, false, apivalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(allErrs, validateControllerRegistrationSpec(&r.Spec, field.NewPath("spec"))...)
}

func validateControllerRegistrationSpec(spec *gardencorev1beta1.ControllerRegistrationSpec, fldPath *field.Path) field.ErrorList {
	allErrs := ValidateControllerResources(spec.Resources, registrationClusterTypes, fldPath.Child("resources"))
	deployment := spec.Deployment
	if deployment == nil {
		return allErrs
	}
	deploymentPath := fldPath.Child("deployment")
	if policy := deployment.Policy; policy != nil && !availablePolicies.Has(*policy) {
		allErrs = append(allErrs, field.NotSupported(deploymentPath.Child("policy"), *policy, sets.List(availablePolicies)))
	}
	if deployment.SeedSelector != nil {
		if slices.ContainsFunc(spec.Resources, isPrimary) {
			allErrs = append(allErrs, field.Forbidden(deploymentPath.Child("seedSelector"), "specifying a seed selector is not allowed when controlling resources primarily"))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(deployment.SeedSelector, metav1validation.LabelSelectorValidationOptions{}, deploymentPath.Child("seedSelector"))...)
	}
	if len(deployment.DeploymentRefs) > 1 {
		allErrs = append(allErrs, field.Forbidden(deploymentPath.Child("deploymentRefs"), "only one deployment reference is allowed"))
	}
	for i, ref := range deployment.DeploymentRefs {
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(deploymentPath.Child("deploymentRefs").Index(i).Child("name"), "must not be empty"))
		}
	}
	return allErrs
}

// ValidateControllerResources is Gardener's validation of the resources of a registration or
// an Extension, for the given cluster types.
func ValidateControllerResources(resources []gardencorev1beta1.ControllerResource, clusterTypes []gardencorev1beta1.ClusterType, resourcesPath *field.Path) field.ErrorList {
	var (
		allErrs    = field.ErrorList{}
		seen       = sets.New[string]()
		validTypes = sets.New(clusterTypes...)
		kinds      = sets.List(extensionsv1alpha1.AllExtensionKinds)
	)
	for i, resource := range resources {
		idxPath := resourcesPath.Index(i)
		if len(resource.Kind) == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("kind"), "field is required"))
		}
		if !extensionsv1alpha1.AllExtensionKinds.Has(resource.Kind) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("kind"), resource.Kind, kinds))
		}
		if len(resource.Type) == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("type"), "field is required"))
		}
		id := extensionsID(resource.Kind, resource.Type)
		if seen.Has(id) {
			allErrs = append(allErrs, field.Duplicate(idxPath, id))
		}
		seen.Insert(id)

		if resource.Kind != extensionsv1alpha1.ExtensionResource {
			notForKind := fmt.Sprintf("field must not be set when kind != %s", extensionsv1alpha1.ExtensionResource)
			if len(resource.AutoEnable) > 0 {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("autoEnable"), notForKind))
			}
			if len(resource.ClusterCompatibility) > 0 {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("clusterCompatibility"), notForKind))
			}
			if resource.ReconcileTimeout != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("reconcileTimeout"), notForKind))
			}
			if resource.Lifecycle != nil {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("lifecycle"), notForKind))
			}
			continue
		}

		// compatible keeps clusterCompatibility's order for the message (Gardener prints a
		// set, in no particular order).
		var compatible []gardencorev1beta1.ClusterType
		for j, clusterType := range resource.ClusterCompatibility {
			path := idxPath.Child("clusterCompatibility").Index(j)
			if !validTypes.Has(clusterType) {
				allErrs = append(allErrs, field.NotSupported(path, clusterType, sets.List(validTypes)))
			}
			if slices.Contains(compatible, clusterType) {
				allErrs = append(allErrs, field.Duplicate(path, clusterType))
				continue
			}
			compatible = append(compatible, clusterType)
		}
		autoEnabled := sets.New[gardencorev1beta1.ClusterType]()
		for j, clusterType := range resource.AutoEnable {
			path := idxPath.Child("autoEnable").Index(j)
			if !validTypes.Has(clusterType) {
				allErrs = append(allErrs, field.NotSupported(path, clusterType, sets.List(validTypes)))
			}
			if !slices.Contains(compatible, clusterType) {
				allErrs = append(allErrs, field.Forbidden(path, fmt.Sprintf("autoEnable is not allowed for cluster type %q when clusterCompatibility is set to %+v", clusterType, compatible)))
			}
			if autoEnabled.Has(clusterType) {
				allErrs = append(allErrs, field.Duplicate(path, clusterType))
			}
			autoEnabled.Insert(clusterType)
		}
		if lifecycle := resource.Lifecycle; lifecycle != nil {
			path := idxPath.Child("lifecycle")
			if lifecycle.Reconcile != nil && !availableStrategiesForReconcile.Has(*lifecycle.Reconcile) {
				allErrs = append(allErrs, field.NotSupported(path.Child("reconcile"), *lifecycle.Reconcile, sets.List(availableStrategiesForReconcile)))
			}
			if lifecycle.Delete != nil && !availableStrategies.Has(*lifecycle.Delete) {
				allErrs = append(allErrs, field.NotSupported(path.Child("delete"), *lifecycle.Delete, sets.List(availableStrategies)))
			}
			if lifecycle.Migrate != nil && !availableStrategies.Has(*lifecycle.Migrate) {
				allErrs = append(allErrs, field.NotSupported(path.Child("migrate"), *lifecycle.Migrate, sets.List(availableStrategies)))
			}
		}
	}
	return allErrs
}

// ValidateControllerRegistrationUpdate is gardener-apiserver's validation of a
// ControllerRegistration update (both defaulted).
func ValidateControllerRegistrationUpdate(newRegistration, oldRegistration *gardencorev1beta1.ControllerRegistration) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newRegistration.ObjectMeta, &oldRegistration.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateControllerRegistrationSpecUpdate(&newRegistration.Spec, &oldRegistration.Spec, newRegistration.DeletionTimestamp != nil, field.NewPath("spec"))...)
	return append(allErrs, ValidateControllerRegistration(newRegistration)...)
}

func validateControllerRegistrationSpecUpdate(newSpec, oldSpec *gardencorev1beta1.ControllerRegistrationSpec, deleting bool, fldPath *field.Path) field.ErrorList {
	if deleting && !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("cannot update controller registration spec if deletion timestamp is set. Requested changes: %s", strings.Join(changedFields(*newSpec, *oldSpec), ",")))}
	}
	return ValidateControllerResourcesUpdate(newSpec.Resources, oldSpec.Resources, fldPath.Child("resources"))
}

// changedFields names the top-level fields of two structs of one type that differ (Gardener
// lists each differing leaf with both values).
func changedFields(a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var changed []string
	for i := range va.NumField() {
		if !apiequality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			changed = append(changed, va.Type().Field(i).Name)
		}
	}
	return changed
}

// ValidateControllerResourcesUpdate forbids changing primary of a kind/type that stays.
func ValidateControllerResourcesUpdate(newResources, oldResources []gardencorev1beta1.ControllerResource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	oldPrimary := make(map[string]*bool, len(oldResources))
	for _, resource := range oldResources {
		oldPrimary[extensionsID(resource.Kind, resource.Type)] = resource.Primary
	}
	for i, resource := range newResources {
		if primary, ok := oldPrimary[extensionsID(resource.Kind, resource.Type)]; ok {
			allErrs = append(allErrs, apivalidation.ValidateImmutableField(resource.Primary, primary, fldPath.Index(i).Child("primary"))...)
		}
	}
	return allErrs
}

// PrimaryConflicts returns, for each kind/type the registration controls primarily that
// another of the registrations also does, an error in gardener-apiserver's
// ControllerRegistrationResources words. Gardener stops at the first.
func PrimaryConflicts(registration *gardencorev1beta1.ControllerRegistration, others []gardencorev1beta1.ControllerRegistration) []error {
	existing := sets.New[string]()
	for _, other := range others {
		if other.Name == registration.Name {
			continue
		}
		for _, resource := range other.Spec.Resources {
			if isPrimary(resource) {
				existing.Insert(extensionsID(resource.Kind, resource.Type))
			}
		}
	}
	var errs []error
	for _, resource := range registration.Spec.Resources {
		if isPrimary(resource) && existing.Has(extensionsID(resource.Kind, resource.Type)) {
			errs = append(errs, fmt.Errorf("another ControllerRegistration resource already exists that controls resource %s/%s primarily", resource.Kind, resource.Type))
		}
	}
	return errs
}

// ValidateControllerDeployment is gardener-apiserver's validation of a ControllerDeployment,
// read in core.gardener.cloud/v1beta1 form: type "helm" with the Helm deployment as
// providerConfig is the built-in Helm type (v1's .helm), any other type a custom one.
func ValidateControllerDeployment(d *gardencorev1beta1.ControllerDeployment, helm *gardencorev1beta1.HelmControllerDeployment) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&d.ObjectMeta, false, apivalidation.NameIsDNSLabel, field.NewPath("metadata"))
	switch {
	case helm != nil:
		helmPath := field.NewPath("helm")
		if (len(helm.Chart) == 0) == (helm.OCIRepository == nil) {
			allErrs = append(allErrs, field.Required(helmPath, "must provide either rawChart or ociRepository"))
		}
		allErrs = append(allErrs, ValidateOCIRepository(helm.OCIRepository, helmPath.Child("ociRepository"))...)
	case d.Type == "":
		allErrs = append(allErrs, field.Forbidden(field.NewPath(""), "must use either helm or a custom deployment configuration"))
	}
	return allErrs
}

// ValidateOCIRepository is Gardener's validation of an OCI chart reference: ref alone, or
// repository with tag or digest (a digest wins over a tag).
func ValidateOCIRepository(oci *gardencorev1beta1.OCIRepository, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if oci == nil {
		return allErrs
	}
	if ptr.Deref(oci.Ref, "") == "" && ptr.Deref(oci.Repository, "") == "" {
		return append(allErrs, field.Required(fldPath, "must provide either ref or repository"))
	}
	if oci.Ref != nil {
		// In name order (Gardener's order follows a map's).
		others := map[string]*string{"digest": oci.Digest, "repository": oci.Repository, "tag": oci.Tag}
		names := make([]string, 0, len(others))
		for name := range others {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if ptr.Deref(others[name], "") != "" {
				allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), fmt.Sprintf("cannot provide %s when ref is set", name)))
			}
		}
		return allErrs
	}
	if ptr.Deref(oci.Repository, "") == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("repository"), ""))
	}
	if ptr.Deref(oci.Tag, "") == "" && ptr.Deref(oci.Digest, "") == "" {
		allErrs = append(allErrs, field.Required(fldPath, "must provide either tag or digest"))
	}
	if oci.Digest != nil && !strings.HasPrefix(*oci.Digest, "sha256:") {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("digest"), oci.Digest, "must start with 'sha256:'"))
	}
	return allErrs
}

// DefaultExtension is what gardener-operator's defaulting webhook does to an Extension before
// its validation: primary defaults to true, an Extension-kind resource auto-enabled for shoots
// is compatible with shoots, and an Extension controlling Workers gets the garden kubeconfig.
func DefaultExtension(ext *operatorv1alpha1.Extension) {
	if slices.ContainsFunc(ext.Spec.Resources, func(r gardencorev1beta1.ControllerResource) bool { return r.Kind == extensionsv1alpha1.WorkerResource }) &&
		ext.Spec.Deployment != nil && ext.Spec.Deployment.ExtensionDeployment != nil && ext.Spec.Deployment.ExtensionDeployment.InjectGardenKubeconfig == nil {
		ext.Spec.Deployment.ExtensionDeployment.InjectGardenKubeconfig = ptr.To(true)
	}
	for i := range ext.Spec.Resources {
		resource := &ext.Spec.Resources[i]
		if resource.Primary == nil {
			resource.Primary = ptr.To(true)
		}
		if resource.Kind == extensionsv1alpha1.ExtensionResource && len(resource.ClusterCompatibility) == 0 &&
			slices.Contains(resource.AutoEnable, gardencorev1beta1.ClusterTypeShoot) {
			resource.ClusterCompatibility = []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot}
		}
	}
}

// ValidateExtension is gardener-operator's validation of an Extension (defaulted).
func ValidateExtension(ext *operatorv1alpha1.Extension) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := validateExtensionDeployment(ext.Spec.Deployment, specPath.Child("deployment"))
	return append(allErrs, ValidateControllerResources(ext.Spec.Resources, extensionClusterTypes, specPath.Child("resources"))...)
}

// ValidateExtensionUpdate is gardener-operator's validation of an Extension update (both
// defaulted): the new spec, and primary unchanged.
func ValidateExtensionUpdate(oldExt, newExt *operatorv1alpha1.Extension) field.ErrorList {
	allErrs := ValidateExtension(newExt)
	return append(allErrs, ValidateControllerResourcesUpdate(newExt.Spec.Resources, oldExt.Spec.Resources, field.NewPath("spec", "resources"))...)
}

func validateExtensionDeployment(deployment *operatorv1alpha1.Deployment, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if deployment == nil {
		return append(allErrs, field.Required(fldPath, "deployment must be specified"))
	}
	if deployment.ExtensionDeployment == nil && deployment.AdmissionDeployment == nil {
		return append(allErrs, field.Required(fldPath, "at least one of extension or admission must be specified"))
	}
	if extension := deployment.ExtensionDeployment; extension != nil {
		allErrs = append(allErrs, validateHelm(extension.Helm, fldPath.Child("extension", "helm"))...)
	}
	if admission := deployment.AdmissionDeployment; admission != nil {
		admissionPath := fldPath.Child("admission")
		if admission.RuntimeCluster == nil && admission.VirtualCluster == nil {
			return append(allErrs, field.Required(admissionPath, "at least one of runtimeCluster or virtualCluster must be specified"))
		}
		if admission.RuntimeCluster != nil {
			allErrs = append(allErrs, validateHelm(admission.RuntimeCluster.Helm, admissionPath.Child("runtimeCluster", "helm"))...)
		}
		if admission.VirtualCluster != nil {
			allErrs = append(allErrs, validateHelm(admission.VirtualCluster.Helm, admissionPath.Child("virtualCluster", "helm"))...)
		}
	}
	return allErrs
}

// validateHelm validates an Extension's Helm deployment; a missing ociRepository is validated as
// an empty one.
func validateHelm(helm *operatorv1alpha1.ExtensionHelm, fldPath *field.Path) field.ErrorList {
	if helm == nil {
		return field.ErrorList{field.Required(fldPath, "helm deployment must be specified")}
	}
	oci := &gardencorev1beta1.OCIRepository{}
	if in := helm.OCIRepository; in != nil {
		oci = &gardencorev1beta1.OCIRepository{Ref: in.Ref, Repository: in.Repository, Tag: in.Tag, Digest: in.Digest}
	}
	return ValidateOCIRepository(oci, fldPath.Child("ociRepository"))
}

// StillRequired is gardener-operator's refusal to delete an Extension that is still required:
// the message of the first of RequiredRuntime, RequiredVirtual that is True, or "".
func StillRequired(ext *operatorv1alpha1.Extension) string {
	for _, t := range []gardencorev1beta1.ConditionType{operatorv1alpha1.ExtensionRequiredRuntime, operatorv1alpha1.ExtensionRequiredVirtual} {
		for _, c := range ext.Status.Conditions {
			if c.Type == t && c.Status == gardencorev1beta1.ConditionTrue {
				return fmt.Sprintf("extension is still being required: %q", c.Message)
			}
		}
	}
	return ""
}
