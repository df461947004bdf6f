package extensionvalidation

import (
	"maps"
	"slices"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var workers = rules[extensionsv1alpha1.Worker, *extensionsv1alpha1.Worker]{
	kind:       extensionsKind("Worker"),
	noun:       "worker",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.Worker) any { return &o.Spec },
	newer:      func() any { return &workerSpecNewer{} },
	valid: func(o *extensionsv1alpha1.Worker) field.ErrorList {
		return concat(
			required(specPath.Child("type"), o.Spec.Type),
			required(specPath.Child("region"), o.Spec.Region),
			required(specPath.Child("secretRef", "name"), o.Spec.SecretRef.Name),
			workerPools(o.Spec.Pools, specPath.Child("pools")),
		)
	},
	immutable: func(n, o *extensionsv1alpha1.Worker) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("region"), n.Spec.Region, o.Spec.Region),
		)
	},
}

// workerSpecNewer declares the members of a Worker's spec that Gardener v1.150's types have
// and our v1.146 ones lack, all in the pools' settings from core.gardener.cloud/v1beta1 (found
// by comparing the JSON members of every validated kind's spec type in both versions; no other
// kind differs). Typed as Gardener's, so that they compare as Gardener compares them (a
// timeout by its length).
type workerSpecNewer struct {
	Pools []workerPoolNewer `json:"pools"`
}

type workerPoolNewer struct {
	MachineControllerManager *struct {
		MachinePreserveTimeout       *metav1.Duration `json:"machinePreserveTimeout,omitempty"`
		AutoPreserveFailedMachineMax *int32           `json:"autoPreserveFailedMachineMax,omitempty"`
	} `json:"machineControllerManager,omitempty"`
	KubeletConfig *struct {
		ImagePullCredentialsVerificationPolicy *string  `json:"imagePullCredentialsVerificationPolicy,omitempty"`
		PreloadedImagesVerificationAllowlist   []string `json:"preloadedImagesVerificationAllowlist,omitempty"`
	} `json:"kubeletConfig,omitempty"`
}

func workerPools(pools []extensionsv1alpha1.WorkerPool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, pool := range pools {
		p := path.Index(i)
		errs = append(errs, required(p.Child("machineType"), pool.MachineType)...)
		errs = append(errs, required(p.Child("machineImage", "name"), pool.MachineImage.Name)...)
		errs = append(errs, required(p.Child("machineImage", "version"), pool.MachineImage.Version)...)
		if pool.Architecture != nil && !slices.Contains(v1beta1constants.ValidArchitectures, *pool.Architecture) {
			errs = append(errs, field.NotSupported(p.Child("architecture"), *pool.Architecture, v1beta1constants.ValidArchitectures))
		}
		errs = append(errs, required(p.Child("name"), pool.Name)...)
		if pool.NodeTemplate != nil {
			// Sorted, so that the same object always gets the same answer.
			for _, name := range slices.Sorted(maps.Keys(pool.NodeTemplate.Capacity)) {
				errs = append(errs, quantity(string(name), pool.NodeTemplate.Capacity[name], p.Child("nodeTemplate", "capacity", string(name)))...)
			}
		}
	}
	return errs
}

// quantity is Kubernetes' rule for a resource quantity, as Gardener applies it to node
// templates: never negative, and whole for resources counted in units.
func quantity(name string, value resource.Quantity, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value.Sign() < 0 {
		errs = append(errs, field.Invalid(path, value.String(), apivalidation.IsNegativeErrorMsg))
	}
	if integerResource(name) && value.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, value, "must be an integer"))
	}
	return errs
}

// integerResources are the standard resources counted in units.
var integerResources = sets.New(
	string(corev1.ResourcePods), string(corev1.ResourceQuotas), string(corev1.ResourceServices),
	string(corev1.ResourceReplicationControllers), string(corev1.ResourceSecrets), string(corev1.ResourceConfigMaps),
	string(corev1.ResourcePersistentVolumeClaims), string(corev1.ResourceServicesNodePorts), string(corev1.ResourceServicesLoadBalancers),
)

// integerResource says whether a resource is counted in units: a standard one, or an extended
// resource (outside kubernetes.io, e.g. nvidia.com/gpu).
func integerResource(name string) bool {
	if integerResources.Has(name) {
		return true
	}
	native := !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix)
	if native || strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}
