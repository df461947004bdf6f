package maintenance

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// UpdateResult is one maintenance operation on a version or credentials: what was done (or why
// it failed) and why it was attempted.
type UpdateResult struct {
	Description string
	Reason      string
	Successful  bool
}

// NamedResult is an UpdateResult for a worker pool or credentials.
type NamedResult struct {
	Name string
	UpdateResult
}

// Outcome is what maintaining a Shoot did to it.
type Outcome struct {
	ControlPlane     *UpdateResult
	WorkerKubernetes []NamedResult
	WorkerImages     []NamedResult
	Credentials      []NamedResult
	// Operations are the other changes, in Gardener's words.
	Operations []string
	// Errors are the maintenance steps that could not run at all (e.g. a pool's machine type
	// is missing from the CloudProfile); Gardener logs them and carries on with the others.
	Errors []error
}

// RequiresStatus says whether the maintenance has something to report in
// status.lastMaintenance.
func (o Outcome) RequiresStatus() bool {
	return o.ControlPlane != nil || len(o.WorkerKubernetes) > 0 || len(o.WorkerImages) > 0 || len(o.Credentials) > 0 || len(o.Operations) > 0
}

// Messages are the description and the failure reason of status.lastMaintenance, in Gardener's
// words: every operation, successful or failed, in the description; the details of the failed
// ones in the failure reason (empty when none failed).
func (o Outcome) Messages() (description, failureReason string) {
	var (
		described, failures []string
		succeeded, failed   int
	)
	add := func(r UpdateResult, success, failure, failureDetail string) {
		if r.Successful {
			succeeded++
			described = append(described, success)
			return
		}
		failed++
		described = append(described, failure)
		failures = append(failures, failureDetail)
	}
	if cp := o.ControlPlane; cp != nil {
		add(*cp, fmt.Sprintf("Control Plane: %s. Reason: %s", cp.Description, cp.Reason),
			fmt.Sprintf("Control Plane: Kubernetes version update failed. Reason for update: %s", cp.Reason),
			fmt.Sprintf("Control Plane: Kubernetes maintenance failure due to: %s", cp.Description))
	}
	for _, r := range o.WorkerKubernetes {
		add(r.UpdateResult, fmt.Sprintf("Worker pool %q: %s. Reason: %s", r.Name, r.Description, r.Reason),
			fmt.Sprintf("Worker pool %q: Kubernetes version maintenance failed. Reason for update: %s", r.Name, r.Reason),
			fmt.Sprintf("Worker pool %q: Kubernetes maintenance failure due to: %s", r.Name, r.Description))
	}
	for _, r := range o.WorkerImages {
		add(r.UpdateResult, fmt.Sprintf("Worker pool %q: %s. Reason: %s", r.Name, r.Description, r.Reason),
			fmt.Sprintf("Worker pool %q: machine image version maintenance failed. Reason for update: %s", r.Name, r.Reason),
			fmt.Sprintf("Worker pool %q: %s", r.Name, r.Description))
	}
	for _, r := range o.Credentials {
		add(r.UpdateResult, fmt.Sprintf("Credentials %q: %s. Reason: %s", r.Name, r.Description, r.Reason),
			fmt.Sprintf("Credentials %q: Automatic rotation failed. Reason for update: %s", r.Name, r.Reason),
			fmt.Sprintf("Credentials %q: Automatic rotation failure due to: %s", r.Name, r.Description))
	}
	if len(o.Operations) > 0 {
		described = append(described, strings.Join(o.Operations, ", "))
	}
	text := strings.Join(described, ", ")
	failureReason = strings.Join(failures, ", ")
	if failed == 0 {
		return strings.TrimRight("All maintenance operations successful. "+text, " "), failureReason
	}
	return strings.TrimRight(fmt.Sprintf("(%d/%d) maintenance operations successful. %s", succeeded, succeeded+failed, text), " "), failureReason
}

// Maintain applies the maintenance of versions and credentials to shoot (the caller's copy) as
// Gardener's maintenance does, with the versions of profile (a CloudProfile's spec, or a
// NamespacedCloudProfile's merged one), and returns what it did. The order is Gardener's:
// machine images (with the kubelet versions before any Kubernetes update), the control
// plane's Kubernetes version, fields that a forced minor update makes invalid, the worker
// pools' Kubernetes versions (never above the control plane's), credentials rotations. A Shoot
// whose Kubernetes version is no semantic version cannot be maintained at all (an error, as in
// Gardener, and nothing is written).
func Maintain(shoot *gardencorev1beta1.Shoot, profile *gardencorev1beta1.CloudProfileSpec, profileName string, now time.Time) (Outcome, error) {
	var (
		o        Outcome
		versions = Versions{Now: now}
		// gardener-apiserver defaults both auto-updates to true.
		unset      = shoot.Spec.Maintenance == nil || shoot.Spec.Maintenance.AutoUpdate == nil
		autoK8s    = unset || shoot.Spec.Maintenance.AutoUpdate.KubernetesVersion
		autoImages = unset || ptr.Deref(shoot.Spec.Maintenance.AutoUpdate.MachineImageVersion, true)
	)
	oldVersion, err := semver.NewVersion(shoot.Spec.Kubernetes.Version)
	if err != nil {
		return o, fmt.Errorf("the Shoot's Kubernetes version %q: %w", shoot.Spec.Kubernetes.Version, err)
	}

	if len(shoot.Spec.Provider.Workers) > 0 {
		results, err := versions.maintainMachineImages(shoot, profile, profileName, oldVersion, autoImages)
		o.WorkerImages = results
		if err != nil {
			o.Errors = append(o.Errors, fmt.Errorf("failed to maintain Shoot machine images: %w", err))
		}
	}

	target, result, err := versions.kubernetesUpdate(shoot.Spec.Kubernetes.Version, autoK8s, profile.Kubernetes.Versions)
	if err != nil {
		o.Errors = append(o.Errors, fmt.Errorf("failed to maintain Shoot kubernetes version: %w", err))
	}
	if target != "" {
		shoot.Spec.Kubernetes.Version = target
	}
	o.ControlPlane = result

	newVersion, err := semver.NewVersion(shoot.Spec.Kubernetes.Version)
	if err != nil {
		return o, fmt.Errorf("the Kubernetes version %q maintenance chose: %w", shoot.Spec.Kubernetes.Version, err)
	}
	o.Operations = append(o.Operations, removeFieldsInvalidAfterUpdate(shoot, oldVersion, newVersion)...)

	for i, pool := range shoot.Spec.Provider.Workers {
		if pool.Kubernetes == nil || pool.Kubernetes.Version == nil {
			continue
		}
		current := *pool.Kubernetes.Version
		target, result, err := versions.kubernetesUpdate(current, autoK8s, profile.Kubernetes.Versions)
		if err != nil {
			o.Errors = append(o.Errors, fmt.Errorf("could not maintain Kubernetes version for worker pool %q: %w", pool.Name, err))
		}
		if target != "" {
			if parsed, err := semver.NewVersion(target); err == nil && parsed.GreaterThan(newVersion) {
				// A forced update of the pool to the next minor must not overtake the control plane.
				target = newVersion.String()
			}
			shoot.Spec.Provider.Workers[i].Kubernetes.Version = &target
			result.Description = fmt.Sprintf("Updated Kubernetes version from %q to %q", current, target)
		}
		if result != nil {
			o.WorkerKubernetes = append(o.WorkerKubernetes, NamedResult{Name: pool.Name, UpdateResult: *result})
		}
	}

	o.Credentials = credentialsRotations(shoot, now)
	return o, nil
}

// kubernetesUpdate decides the update of a Kubernetes version (the control plane's or a
// pool's): the target (empty if it stays) and the result to report (nil if nothing to report).
func (p Versions) kubernetesUpdate(current string, autoUpdate bool, offered []gardencorev1beta1.ExpirableVersion) (string, *UpdateResult, error) {
	c, err := semver.NewVersion(current)
	if err != nil {
		return "", nil, err
	}
	i := slices.IndexFunc(offered, func(v gardencorev1beta1.ExpirableVersion) bool {
		parsed, err := semver.NewVersion(v.Version)
		return err == nil && parsed.Equal(c)
	})
	var (
		reason  string
		expired bool
	)
	switch {
	case i < 0:
		reason, expired = "Version does not exist in CloudProfile", true
	case p.Expired(offered[i]):
		reason, expired = "Kubernetes version expired - force update required", true
	case autoUpdate:
		reason = "Automatic update of Kubernetes version configured"
	default:
		return "", nil, nil
	}
	target, err := Target(offered, current, p.LatestPatch, p.ForceToConsecutiveMinor, expired)
	if err != nil {
		return "", &UpdateResult{Description: fmt.Sprintf("could not determine higher suitable version than %q: %v", current, err), Reason: reason}, err
	}
	if target == "" {
		return "", nil, nil
	}
	return target, &UpdateResult{Description: fmt.Sprintf("Updated Kubernetes version from %q to %q", current, target), Reason: reason, Successful: true}, nil
}

// maintainMachineImages updates the machine image version of every pool that needs it. A pool
// whose machine type or image the CloudProfile lacks stops it (as in Gardener); the results of
// the pools before it are kept.
func (p Versions) maintainMachineImages(shoot *gardencorev1beta1.Shoot, profile *gardencorev1beta1.CloudProfileSpec, profileName string, controlPlane *semver.Version, autoUpdate bool) ([]NamedResult, error) {
	var results []NamedResult
	for i, worker := range shoot.Spec.Provider.Workers {
		if worker.Machine.Image == nil {
			continue
		}
		typeIndex := slices.IndexFunc(profile.MachineTypes, func(t gardencorev1beta1.MachineType) bool { return t.Name == worker.Machine.Type })
		if typeIndex < 0 {
			return results, fmt.Errorf("machine type %q of worker %q does not exist in cloudprofile", worker.Machine.Type, worker.Name)
		}
		image, ok := findImage(profile.MachineImages, worker.Machine.Image.Name)
		if !ok {
			return results, fmt.Errorf("failure while determining the default machine image in the CloudProfile: no machineImage with name %q (specified in shoot) could be found in the cloudProfile %q", worker.Machine.Image.Name, profileName)
		}
		kubelet := controlPlane
		if worker.Kubernetes != nil && worker.Kubernetes.Version != nil {
			v, err := semver.NewVersion(*worker.Kubernetes.Version)
			if err != nil {
				return results, err
			}
			kubelet = v
		}
		candidates := candidateImageVersions(image, worker, kubelet, &profile.MachineTypes[typeIndex], profile.MachineCapabilities)
		target, result, ok := p.imageUpdate(image, candidates, *worker.Machine.Image, autoUpdate)
		if !ok {
			continue
		}
		results = append(results, NamedResult{Name: worker.Name, UpdateResult: result})
		if target != "" {
			shoot.Spec.Provider.Workers[i].Machine.Image.Version = ptr.To(target)
		}
	}
	return results, nil
}

// removeFieldsInvalidAfterUpdate clears the fields Gardener forbids from the Kubernetes
// version the Shoot was (force-)updated to, and says what it cleared.
func removeFieldsInvalidAfterUpdate(shoot *gardencorev1beta1.Shoot, oldVersion, newVersion *semver.Version) []string {
	crossed := func(minor uint64) bool {
		boundary := semver.New(1, minor, 0, "", "")
		return oldVersion.LessThan(boundary) && !newVersion.LessThan(boundary)
	}
	k := &shoot.Spec.Kubernetes
	var operations []string
	if crossed(33) {
		if k.KubeControllerManager != nil && k.KubeControllerManager.PodEvictionTimeout != nil {
			k.KubeControllerManager.PodEvictionTimeout = nil
			operations = append(operations, ".spec.kubernetes.kubeControllerManager.podEvictionTimeout is set to nil. Reason: The field was deprecated in favour of `spec.kubernetes.kubeAPIServer.defaultNotReadyTolerationSeconds` and `spec.kubernetes.kubeAPIServer.defaultUnreachableTolerationSeconds` and can no longer be enabled for Shoot clusters using Kubernetes version 1.33+")
		}
		if k.ClusterAutoscaler != nil && k.ClusterAutoscaler.MaxEmptyBulkDelete != nil {
			k.ClusterAutoscaler.MaxEmptyBulkDelete = nil
			operations = append(operations, ".spec.kubernetes.clusterAutoscaler.maxEmptyBulkDelete is set to nil. Reason: The field was deprecated in favour of `.spec.kubernetes.clusterAutoscaler.maxScaleDownParallelism` and can no longer be enabled for Shoot clusters using Kubernetes version 1.33+")
		}
	}
	if crossed(35) {
		if k.KubeAPIServer != nil && k.KubeAPIServer.EnableAnonymousAuthentication != nil {
			k.KubeAPIServer.EnableAnonymousAuthentication = nil
			operations = append(operations, ".spec.kubernetes.kubeAPIServer.enableAnonymousAuthentication was removed. Reason: The field is no longer supported for Shoot clusters using Kubernetes version 1.35+")
		}
		if k.KubeScheduler != nil && k.KubeScheduler.KubeMaxPDVols != nil {
			k.KubeScheduler.KubeMaxPDVols = nil
			operations = append(operations, ".spec.kubernetes.kubeScheduler.kubeMaxPDVols was removed. Reason: kubeMaxPDVols is deprecated and not respected by the kube-scheduler")
		}
		if k.KubeAPIServer != nil && k.KubeAPIServer.WatchCacheSizes != nil && k.KubeAPIServer.WatchCacheSizes.Default != nil {
			k.KubeAPIServer.WatchCacheSizes.Default = nil
			operations = append(operations, ".spec.kubernetes.kubeAPIServer.watchCacheSizes.default was removed. Reason: the default size configuration is deprecated and not respected by the kube-apiserver")
		}
		if shoot.Spec.Addons != nil {
			shoot.Spec.Addons = nil
			operations = append(operations, ".spec.addons was removed. Reason: addons are not supported anymore for Kubernetes versions 1.35+")
		}
		if shoot.Spec.DNS != nil {
			for i := range shoot.Spec.DNS.Providers {
				if shoot.Spec.DNS.Providers[i].SecretName != nil {
					shoot.Spec.DNS.Providers[i].SecretName = nil
					operations = append(operations, fmt.Sprintf(".spec.dns.providers[%d].secretName was removed. Reason: The field is no longer supported for Shoot clusters using Kubernetes version 1.35+", i))
				}
			}
		}
	}
	return operations
}

// credentialsRotations are the automatic credentials rotations whose period has passed, in
// a fixed order (SSH keypair, observability, etcd encryption key).
func credentialsRotations(shoot *gardencorev1beta1.Shoot, now time.Time) []NamedResult {
	if shoot.Spec.Maintenance == nil || shoot.Spec.Maintenance.AutoRotation == nil || shoot.Spec.Maintenance.AutoRotation.Credentials == nil {
		return nil
	}
	config := shoot.Spec.Maintenance.AutoRotation.Credentials
	var rotation *gardencorev1beta1.ShootCredentialsRotation
	if shoot.Status.Credentials != nil {
		rotation = shoot.Status.Credentials.Rotation
	}
	// due: rotation is configured, and its period has passed since the last completed rotation
	// (since the Shoot's creation if it never completed one).
	due := func(c *gardencorev1beta1.MaintenanceRotationConfig, lastCompletion *metav1.Time) bool {
		if c == nil || c.RotationPeriod == nil || c.RotationPeriod.Duration == 0 {
			return false
		}
		last := shoot.CreationTimestamp.Time
		if lastCompletion != nil {
			last = lastCompletion.Time
		}
		return last.Before(now.Add(-c.RotationPeriod.Duration))
	}

	var results []NamedResult
	var sshCompletion, observabilityCompletion, etcdCompletion *metav1.Time
	var etcdPhase gardencorev1beta1.CredentialsRotationPhase
	if rotation != nil {
		if rotation.SSHKeypair != nil {
			sshCompletion = rotation.SSHKeypair.LastCompletionTime
		}
		if rotation.Observability != nil {
			observabilityCompletion = rotation.Observability.LastCompletionTime
		}
		if rotation.ETCDEncryptionKey != nil {
			etcdCompletion, etcdPhase = rotation.ETCDEncryptionKey.LastCompletionTime, rotation.ETCDEncryptionKey.Phase
		}
	}
	sshAccess := len(shoot.Spec.Provider.Workers) > 0 && (shoot.Spec.Provider.WorkersSettings == nil || shoot.Spec.Provider.WorkersSettings.SSHAccess == nil || shoot.Spec.Provider.WorkersSettings.SSHAccess.Enabled)
	if sshAccess && due(config.SSHKeypair, sshCompletion) {
		results = append(results, NamedResult{Name: v1beta1constants.ShootOperationRotateSSHKeypair, UpdateResult: UpdateResult{
			Description: "SSH keypair rotation started", Reason: "Automatic rotation of SSH keypair configured", Successful: true,
		}})
	}
	if due(config.Observability, observabilityCompletion) {
		results = append(results, NamedResult{Name: v1beta1constants.OperationRotateObservabilityCredentials, UpdateResult: UpdateResult{
			Description: "Observability passwords rotation started", Reason: "Automatic rotation of observability passwords configured", Successful: true,
		}})
	}
	hibernated := shoot.Spec.Hibernation != nil && ptr.Deref(shoot.Spec.Hibernation.Enabled, false)
	// The etcd encryption key cannot be rotated while the Shoot is hibernated.
	if !hibernated && due(config.ETCDEncryptionKey, etcdCompletion) {
		if etcdPhase == "" || etcdPhase == gardencorev1beta1.RotationCompleted {
			results = append(results, NamedResult{Name: v1beta1constants.OperationRotateETCDEncryptionKey, UpdateResult: UpdateResult{
				Description: "ETCD Encryption key rotation started", Reason: "Automatic rotation of etcd encryption key configured", Successful: true,
			}})
		} else {
			results = append(results, NamedResult{Name: v1beta1constants.OperationRotateETCDEncryptionKey, UpdateResult: UpdateResult{
				Description: "Could not start ETCD encryption key rotation", Reason: "ETCD encryption key rotation is already in progress",
			}})
		}
	}
	return results
}

// splitOperations splits an operation annotation's value at Gardener's separator, trimmed,
// without empty parts.
func splitOperations(value string) []string {
	var operations []string
	for _, part := range strings.Split(value, v1beta1constants.GardenerOperationsSeparator) {
		if part = strings.TrimSpace(part); part != "" {
			operations = append(operations, part)
		}
	}
	return operations
}

// HasMaintainNow says whether the Shoot's operation annotation asks for maintenance now.
func HasMaintainNow(annotations map[string]string) bool {
	return slices.Contains(splitOperations(annotations[v1beta1constants.GardenerOperation]), v1beta1constants.ShootOperationMaintain)
}

// SetOperation sets the operation annotation as Gardener's maintenance does: the "maintain"
// request is consumed; a failed Shoot that asked for a retry in maintenance gets "retry"; any
// other Shoot that has had an operation gets "reconcile" together with the operations it asked
// to run in maintenance (maintenance.gardener.cloud/operation, consumed) and the credentials
// rotations that are due. It returns the operation set, if it is more than a reconcile.
func SetOperation(shoot *gardencorev1beta1.Shoot, credentials []NamedResult) string {
	if HasMaintainNow(shoot.Annotations) {
		delete(shoot.Annotations, v1beta1constants.GardenerOperation)
	}
	if shoot.Status.LastOperation == nil {
		return ""
	}
	if shoot.Status.LastOperation.State == gardencorev1beta1.LastOperationStateFailed {
		if needsRetry, _ := strconv.ParseBool(shoot.Annotations[v1beta1constants.FailedShootNeedsRetryOperation]); needsRetry {
			metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.ShootOperationRetry)
			delete(shoot.Annotations, v1beta1constants.FailedShootNeedsRetryOperation)
		}
		return ""
	}
	operations := splitOperations(shoot.Annotations[v1beta1constants.GardenerMaintenanceOperation])
	if !slices.Contains(operations, v1beta1constants.GardenerOperationReconcile) {
		operations = append(operations, v1beta1constants.GardenerOperationReconcile)
	}
	for _, c := range credentials {
		if !c.Successful {
			continue
		}
		if c.Name == v1beta1constants.OperationRotateETCDEncryptionKey && slices.Contains(operations, v1beta1constants.OperationRotateETCDEncryptionKeyStart) {
			continue
		}
		operations = append(operations, c.Name)
	}
	operation := strings.Join(operations, v1beta1constants.GardenerOperationsSeparator)
	metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.GardenerOperation, operation)
	delete(shoot.Annotations, v1beta1constants.GardenerMaintenanceOperation)
	if operation == v1beta1constants.GardenerOperationReconcile {
		return ""
	}
	return operation
}

// AddTasks adds the tasks every maintenance asks gardenlet for (shoot.gardener.cloud/tasks,
// comma-separated): the infrastructure and DNS records, and the restarts the configuration
// enables.
func AddTasks(shoot *gardencorev1beta1.Shoot, cfg MaintenanceConfig) {
	tasks := []string{
		v1beta1constants.ShootTaskDeployInfrastructure,
		v1beta1constants.ShootTaskDeployDNSRecordInternal,
		v1beta1constants.ShootTaskDeployDNSRecordExternal,
		v1beta1constants.ShootTaskDeployDNSRecordIngress,
	}
	if cfg.RestartControlPlane {
		tasks = append(tasks, v1beta1constants.ShootTaskRestartControlPlanePods)
	}
	if cfg.RestartCoreAddons {
		tasks = append(tasks, v1beta1constants.ShootTaskRestartCoreAddons)
	}
	var existing []string
	if value := shoot.Annotations[v1beta1constants.ShootTasks]; value != "" {
		existing = strings.Split(value, ",")
	}
	for _, task := range tasks {
		if !slices.Contains(existing, task) {
			existing = append(existing, task)
		}
	}
	metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.ShootTasks, strings.Join(existing, ","))
}
