// Package kinds declares, once, every API kind the functions watch or list, with the resource
// the API serves it as: function declarations, the generated sources and RBAC use these values.
package kinds

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

var core = gardencorev1beta1.SchemeGroupVersion

// Gardener's kinds (served by gardener-apiserver in the garden).
var (
	Shoot                  = function.NewKind(core, "Shoot", "shoots")
	Project                = function.NewClusterKind(core, "Project", "projects")
	SecretBinding          = function.NewKind(core, "SecretBinding", "secretbindings")
	Quota                  = function.NewKind(core, "Quota", "quotas")
	BackupEntry            = function.NewKind(core, "BackupEntry", "backupentries")
	BackupBucket           = function.NewClusterKind(core, "BackupBucket", "backupbuckets")
	CloudProfile           = function.NewClusterKind(core, "CloudProfile", "cloudprofiles")
	NamespacedCloudProfile = function.NewKind(core, "NamespacedCloudProfile", "namespacedcloudprofiles")
	ControllerDeployment   = function.NewClusterKind(core, "ControllerDeployment", "controllerdeployments")
	ControllerRegistration = function.NewClusterKind(core, "ControllerRegistration", "controllerregistrations")
	ControllerInstallation = function.NewClusterKind(core, "ControllerInstallation", "controllerinstallations")
	ExposureClass          = function.NewClusterKind(core, "ExposureClass", "exposureclasses")
	Seed                   = function.NewClusterKind(core, "Seed", "seeds")
	InternalSecret         = function.NewKind(core, "InternalSecret", "internalsecrets").AsConfidential()
	ShootState             = function.NewKind(core, "ShootState", "shootstates")
	ManagedSeed            = function.NewKind(seedmanagementv1alpha1.SchemeGroupVersion, "ManagedSeed", "managedseeds")
	ManagedSeedSet         = function.NewKind(seedmanagementv1alpha1.SchemeGroupVersion, "ManagedSeedSet", "managedseedsets")
	Bastion                = function.NewKind(operationsv1alpha1.SchemeGroupVersion, "Bastion", "bastions")
	CredentialsBinding     = function.NewKind(securityv1alpha1.SchemeGroupVersion, "CredentialsBinding", "credentialsbindings")
	WorkloadIdentity       = function.NewKind(securityv1alpha1.SchemeGroupVersion, "WorkloadIdentity", "workloadidentities")
)

// gardener-operator's kinds (served by the runtime cluster's kube-apiserver from CRDs).
var (
	Extension = function.NewClusterKind(operatorv1alpha1.SchemeGroupVersion, "Extension", "extensions")
)

// Gardener's extension kinds (extensions.gardener.cloud, served from CRDs where extensions run;
// gardener-operator reads those of class "garden" in the garden runtime cluster).
var (
	ExtensionsBackupBucket = function.NewClusterKind(extensionsv1alpha1.SchemeGroupVersion, "BackupBucket", "backupbuckets")
	ExtensionsBackupEntry  = function.NewClusterKind(extensionsv1alpha1.SchemeGroupVersion, "BackupEntry", "backupentries")
	// ExtensionsCluster is a shoot's Cluster in its seed, named after the shoot's control-plane
	// namespace: per seed, a tenant's.
	ExtensionsCluster   = function.NewClusterKind(extensionsv1alpha1.SchemeGroupVersion, "Cluster", "clusters").AsNamingTenants()
	ExtensionsDNSRecord = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "DNSRecord", "dnsrecords")
	ExtensionsExtension = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "Extension", "extensions")

	ExtensionsBastion                 = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "Bastion", "bastions")
	ExtensionsContainerRuntime        = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "ContainerRuntime", "containerruntimes")
	ExtensionsControlPlane            = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "ControlPlane", "controlplanes")
	ExtensionsInfrastructure          = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "Infrastructure", "infrastructures")
	ExtensionsNetwork                 = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "Network", "networks")
	ExtensionsOperatingSystemConfig   = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "OperatingSystemConfig", "operatingsystemconfigs")
	ExtensionsSelfHostedShootExposure = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "SelfHostedShootExposure", "selfhostedshootexposures")
	ExtensionsWorker                  = function.NewKind(extensionsv1alpha1.SchemeGroupVersion, "Worker", "workers")
)

// Kubernetes' kinds.
var (
	Namespace                 = function.NewClusterKind(corev1.SchemeGroupVersion, "Namespace", "namespaces")
	Secret                    = function.NewKind(corev1.SchemeGroupVersion, "Secret", "secrets").AsConfidential()
	ConfigMap                 = function.NewKind(corev1.SchemeGroupVersion, "ConfigMap", "configmaps")
	ResourceQuota             = function.NewKind(corev1.SchemeGroupVersion, "ResourceQuota", "resourcequotas")
	ClusterRole               = function.NewClusterKind(rbacv1.SchemeGroupVersion, "ClusterRole", "clusterroles")
	ClusterRoleBinding        = function.NewClusterKind(rbacv1.SchemeGroupVersion, "ClusterRoleBinding", "clusterrolebindings")
	RoleBinding               = function.NewKind(rbacv1.SchemeGroupVersion, "RoleBinding", "rolebindings")
	ServiceAccount            = function.NewKind(corev1.SchemeGroupVersion, "ServiceAccount", "serviceaccounts")
	Event                     = function.NewKind(corev1.SchemeGroupVersion, "Event", "events")
	Lease                     = function.NewKind(coordinationv1.SchemeGroupVersion, "Lease", "leases")
	CertificateSigningRequest = function.NewClusterKind(certificatesv1.SchemeGroupVersion, "CertificateSigningRequest", "certificatesigningrequests")
	Role                      = function.NewKind(rbacv1.SchemeGroupVersion, "Role", "roles")
	Service                   = function.NewKind(corev1.SchemeGroupVersion, "Service", "services")
	Pod                       = function.NewKind(corev1.SchemeGroupVersion, "Pod", "pods")
	Deployment                = function.NewKind(appsv1.SchemeGroupVersion, "Deployment", "deployments")
	StatefulSet               = function.NewKind(appsv1.SchemeGroupVersion, "StatefulSet", "statefulsets")
	DaemonSet                 = function.NewKind(appsv1.SchemeGroupVersion, "DaemonSet", "daemonsets")
	Job                       = function.NewKind(batchv1.SchemeGroupVersion, "Job", "jobs")
	CronJob                   = function.NewKind(batchv1.SchemeGroupVersion, "CronJob", "cronjobs")
	HorizontalPodAutoscaler   = function.NewKind(autoscalingv1.SchemeGroupVersion, "HorizontalPodAutoscaler", "horizontalpodautoscalers")
	Node                      = function.NewClusterKind(corev1.SchemeGroupVersion, "Node", "nodes")
	CSINode                   = function.NewClusterKind(storagev1.SchemeGroupVersion, "CSINode", "csinodes")
	NetworkPolicy             = function.NewKind(networkingv1.SchemeGroupVersion, "NetworkPolicy", "networkpolicies")
	Ingress                   = function.NewKind(networkingv1.SchemeGroupVersion, "Ingress", "ingresses")

	MutatingWebhookConfiguration   = function.NewClusterKind(admissionregistrationv1.SchemeGroupVersion, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations")
	ValidatingWebhookConfiguration = function.NewClusterKind(admissionregistrationv1.SchemeGroupVersion, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations")
)

// machine-controller-manager's Machine (a CRD in the seed, in each shoot's namespace).
var Machine = function.NewKind(schema.GroupVersion{Group: "machine.sapcloud.io", Version: "v1alpha1"}, "Machine", "machines")

// GRM's kinds (resources.gardener.cloud, a CRD in the seed that config/ ships).
var (
	ManagedResource = function.NewKind(resourcesv1alpha1.SchemeGroupVersion, "ManagedResource", "managedresources")
)
