// Package scheme holds the runtime scheme every function and webhook talks to the API with:
// Kubernetes' built-in kinds and Gardener's API groups.
package scheme

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
)

// Gardener knows the built-in Kubernetes kinds (CustomResourceDefinitions included) and the
// Gardener kinds the functions use.
var Gardener = runtime.NewScheme()

func init() {
	utilruntime.Must(kubernetesscheme.AddToScheme(Gardener))
	utilruntime.Must(gardencorev1beta1.AddToScheme(Gardener))
	utilruntime.Must(operationsv1alpha1.AddToScheme(Gardener))
	utilruntime.Must(securityv1alpha1.AddToScheme(Gardener))
	utilruntime.Must(seedmanagementv1alpha1.AddToScheme(Gardener))
	utilruntime.Must(operatorv1alpha1.AddToScheme(Gardener))
	utilruntime.Must(extensionsv1alpha1.AddToScheme(Gardener))
	utilruntime.Must(resourcesv1alpha1.AddToScheme(Gardener))
	// Health checks read CustomResourceDefinitions typed.
	utilruntime.Must(apiextensionsv1.AddToScheme(Gardener))
	utilruntime.Must(apiextensionsv1beta1.AddToScheme(Gardener))
}
