package controllerinstallation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	chartpkg "github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/helmrelease"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// DeploymentTypeHelm is the type of ControllerDeployments whose providerConfig is a Helm chart
// (v1beta1; core.gardener.cloud/v1 calls it .helm).
const DeploymentTypeHelm = "helm"

// LabelChecksum is the label on Helm's release record that says what the release was applied
// with (Checksum): the function's own, Helm keeps it across revisions.
const LabelChecksum = "controllerinstallation.gardener-knative.io/checksum"

// Reconciler installs one seed's ControllerInstallations as Helm releases.
type Reconciler struct {
	SeedName string
	Identity Identity
	// Source is the garden, Target the seed.
	Source, Target function.ClusterClient
	Charts         *chartpkg.Puller
	Helm           *helmrelease.Client
	Clock          clock.PassiveClock
	// HelmTimeout bounds one Helm action; PendingStaleAfter is when a pending release counts as
	// interrupted.
	HelmTimeout       time.Duration
	PendingStaleAfter time.Duration
	Log               *slog.Logger
	// lock makes Helm's actions on one installation exclusive across the function's replicas.
	lock *installLock
}

// NewReconciler builds the reconciler with a Helm client of the seed and a chart cache.
func NewReconciler(deps function.Deps, cfg *Config) (*Reconciler, error) {
	helm, err := helmrelease.New(deps.Target.Config, cfg.HelmMaxHistory, cfg.HelmTimeout, deps.Log)
	if err != nil {
		return nil, err
	}
	return &Reconciler{
		SeedName: cfg.SeedName, Identity: cfg.Identity(),
		Source: deps.Source, Target: deps.Target,
		Charts: chartpkg.NewPuller(cfg.ChartCacheBytes), Helm: helm, Clock: deps.Clock,
		HelmTimeout: cfg.HelmTimeout, PendingStaleAfter: cfg.HelmPendingStaleAfter, Log: deps.Log,
		lock: newInstallLock(deps.Target, deps.Clock, cfg.HelmTimeout, cfg.PodName),
	}, nil
}

// conditionUpdate is one condition the reconcile decided on.
type conditionUpdate struct {
	Type    gardencorev1beta1.ConditionType
	Status  gardencorev1beta1.ConditionStatus
	Reason  string
	Message string
}

// Reconcile converges one ControllerInstallation of the function's seed.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) (err error) {
	ci := &gardencorev1beta1.ControllerInstallation{}
	if err := req.Reader.Get(ctx, req.Key, ci); err != nil {
		return err
	}
	if ci.Spec.SeedRef == nil || ci.Spec.SeedRef.Name != r.SeedName {
		return nil // another seed's gardenlet installs it
	}
	// The seed's side is read from the sweep's snapshot during a sweep (it lists the release
	// namespaces and records), live otherwise.
	seedReader := req.Target
	var updates []conditionUpdate
	defer func() {
		if patchErr := r.patchConditions(ctx, ci, updates); patchErr != nil {
			err = errors.Join(err, patchErr)
		}
	}()
	if ci.DeletionTimestamp != nil {
		return r.delete(ctx, req.Reader, seedReader, ci, &updates)
	}
	return r.reconcile(ctx, req.Reader, seedReader, ci, &updates)
}

func (r *Reconciler) reconcile(ctx context.Context, garden, seedReader client.Reader, ci *gardencorev1beta1.ControllerInstallation, updates *[]conditionUpdate) error {
	if ci.Spec.DeploymentRef == nil {
		return nil // not a Helm installation: gardenlet's predicate drops it
	}
	deployment := &gardencorev1beta1.ControllerDeployment{}
	if err := garden.Get(ctx, client.ObjectKey{Name: ci.Spec.DeploymentRef.Name}, deployment); err != nil {
		// gardenlet's predicate drops installations whose deployment cannot be read; the
		// deployment's creation event maps to this installation.
		return client.IgnoreNotFound(err)
	}
	if deployment.Type != DeploymentTypeHelm {
		return nil
	}
	if !controllerutil.ContainsFinalizer(ci, FinalizerName) {
		if _, err := r.Source.Writer.Patch(ctx, ci, func() { controllerutil.AddFinalizer(ci, FinalizerName) }); err != nil {
			return fmt.Errorf("failed to add finalizer: %w", err)
		}
	}
	valid := func(status gardencorev1beta1.ConditionStatus, reason, message string) {
		*updates = append(*updates, conditionUpdate{gardencorev1beta1.ControllerInstallationValid, status, reason, message})
	}
	installed := func(status gardencorev1beta1.ConditionStatus, reason, message string) {
		*updates = append(*updates, conditionUpdate{gardencorev1beta1.ControllerInstallationInstalled, status, reason, message})
	}

	registration := &gardencorev1beta1.ControllerRegistration{}
	if err := garden.Get(ctx, client.ObjectKey{Name: ci.Spec.RegistrationRef.Name}, registration); err != nil {
		if apierrors.IsNotFound(err) {
			valid(gardencorev1beta1.ConditionFalse, "RegistrationNotFound", fmt.Sprintf("Referenced ControllerRegistration does not exist: %+v", err))
			return function.Terminal(err)
		}
		valid(gardencorev1beta1.ConditionUnknown, "RegistrationReadError", fmt.Sprintf("Referenced ControllerRegistration cannot be read: %+v", err))
		return err
	}
	seed := &gardencorev1beta1.Seed{}
	if err := garden.Get(ctx, client.ObjectKey{Name: ci.Spec.SeedRef.Name}, seed); err != nil {
		if apierrors.IsNotFound(err) {
			valid(gardencorev1beta1.ConditionFalse, "SeedNotFound", fmt.Sprintf("Referenced Seed does not exist: %+v", err))
			return function.Terminal(err)
		}
		valid(gardencorev1beta1.ConditionUnknown, "SeedReadError", fmt.Sprintf("Referenced Seed cannot be read: %+v", err))
		return err
	}

	helm, err := decodeHelm(deployment)
	if err != nil {
		valid(gardencorev1beta1.ConditionFalse, "ChartInformationInvalid", fmt.Sprintf("chart values cannot be unmarshalled: %+v", err))
		return function.Terminal(err)
	}
	var deploymentValues map[string]any
	if helm.Values != nil && len(helm.Values.Raw) > 0 {
		if err := json.Unmarshal(helm.Values.Raw, &deploymentValues); err != nil {
			valid(gardencorev1beta1.ConditionFalse, "ChartInformationInvalid", fmt.Sprintf("chart values cannot be unmarshalled: %+v", err))
			return function.Terminal(err)
		}
	}
	if seed.Status.ClusterIdentity == nil {
		return fmt.Errorf("cluster-identity of seed %q not set", seed.Name)
	}
	injected, err := InjectedValues(r.Identity, seed)
	if err != nil {
		return err
	}
	values := MergeValues(deploymentValues, injected)

	archive, digest := helm.Chart, ArchiveDigest(helm.Chart)
	if len(archive) == 0 {
		pulled, err := r.pull(ctx, helm.OCIRepository)
		if err != nil {
			valid(gardencorev1beta1.ConditionFalse, "OCIChartCannotBePulled", fmt.Sprintf("chart pulling process failed: %+v", err))
			return err
		}
		archive, digest = pulled.Archive, pulled.Digest
	}

	namespace, releaseName := NamespaceName(ci), registration.Name
	nsMeta := DesiredNamespace(ci, registration.Name, seed)
	checksum, err := Checksum(digest, values, nsMeta)
	if err != nil {
		return err
	}
	state, err := releaseState(ctx, seedReader, namespace, releaseName)
	if err != nil {
		return fmt.Errorf("reading the state of release %s/%s: %w", namespace, releaseName, err)
	}
	if state.Found && state.Status == release.StatusDeployed && state.Checksum == checksum {
		valid(gardencorev1beta1.ConditionTrue, "RegistrationValid", "chart could be rendered successfully.")
		*updates = append(*updates, releaseConditions(state, releaseName)...)
		return nil
	}
	if state.Found && state.Status.IsPending() && r.Clock.Since(state.Since) < r.PendingStaleAfter {
		// Another reconcile (an event racing a sweep) is installing it: it reports the outcome.
		*updates = append(*updates, releaseConditions(state, releaseName)...)
		return nil
	}

	loaded, err := loader.LoadArchive(bytes.NewReader(archive))
	if err == nil {
		err = render(loaded, values, releaseName, namespace)
	}
	if err != nil {
		valid(gardencorev1beta1.ConditionFalse, "ChartCannotBeRendered", fmt.Sprintf("chart rendering process failed: %+v", err))
		return function.Terminal(err)
	}
	valid(gardencorev1beta1.ConditionTrue, "RegistrationValid", "chart could be rendered successfully.")

	// Helm will run: no other process may run Helm on this installation meanwhile (an
	// uninstall beside this install would leave what the install creates after it).
	unlock, err := r.lock.acquire(ctx, ci.Name)
	if err != nil {
		return err
	}
	defer unlock(context.WithoutCancel(ctx))
	if err := r.ensureNamespace(ctx, seedReader, namespace, nsMeta); err != nil {
		return err
	}
	// Helm runs to its end even when the event's budget runs out: an install cut off midway
	// leaves the release pending (locked) until it counts as interrupted.
	helmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.HelmTimeout)
	defer cancel()
	rel, err := r.Helm.Apply(helmCtx, namespace, releaseName, loaded, values, map[string]string{LabelChecksum: checksum}, r.Clock.Now(), r.PendingStaleAfter)
	if apierrors.IsConflict(err) {
		return err // a concurrent reconcile installed it: not a failure, reconciled again
	}
	if err != nil {
		installed(gardencorev1beta1.ConditionFalse, "InstallationFailed", fmt.Sprintf("Installation of Helm release %q failed: %+v", releaseName, err))
		return err
	}
	// The owner guard for what Helm created: an installation deleted (or replaced) while Helm
	// ran gets its release uninstalled again; reconciled again, its deletion finishes the rest.
	if err := function.OwnerUnchanged(ctx, r.Source.Reader, gardencorev1beta1.SchemeGroupVersion.Version); err != nil {
		if !apierrors.IsConflict(err) {
			return err
		}
		if uninstallErr := r.Helm.Uninstall(namespace, releaseName); uninstallErr != nil {
			return errors.Join(err, fmt.Errorf("uninstalling release %s/%s of an installation deleted meanwhile: %w", namespace, releaseName, uninstallErr))
		}
		r.Log.Info("uninstalled the release of an installation deleted while it was installed", "installation", ci.Name, "release", namespace+"/"+releaseName)
		return err
	}
	r.Log.Info("applied release", "installation", ci.Name, "release", namespace+"/"+releaseName, "revision", rel.Version, "status", rel.Info.Status)
	*updates = append(*updates, releaseConditions(ReleaseState{Found: true, Revision: rel.Version, Status: rel.Info.Status, Checksum: checksum, Description: rel.Info.Description}, releaseName)...)
	return nil
}

func (r *Reconciler) delete(ctx context.Context, garden, seedReader client.Reader, ci *gardencorev1beta1.ControllerInstallation, updates *[]conditionUpdate) error {
	installed := func(status gardencorev1beta1.ConditionStatus, reason, message string) {
		*updates = append(*updates, conditionUpdate{gardencorev1beta1.ControllerInstallationInstalled, status, reason, message})
	}
	if !controllerutil.ContainsFinalizer(ci, FinalizerName) {
		return nil
	}
	seed := &gardencorev1beta1.Seed{}
	if err := garden.Get(ctx, client.ObjectKey{Name: ci.Spec.SeedRef.Name}, seed); err != nil {
		if apierrors.IsNotFound(err) {
			*updates = append(*updates, conditionUpdate{gardencorev1beta1.ControllerInstallationValid, gardencorev1beta1.ConditionFalse, "SeedNotFound", fmt.Sprintf("Referenced Seed does not exist: %+v", err)})
			return function.Terminal(err)
		}
		*updates = append(*updates, conditionUpdate{gardencorev1beta1.ControllerInstallationValid, gardencorev1beta1.ConditionUnknown, "SeedReadError", fmt.Sprintf("Referenced Seed cannot be read: %+v", err)})
		return err
	}

	namespace, releaseName := NamespaceName(ci), ci.Spec.RegistrationRef.Name
	state, err := releaseState(ctx, seedReader, namespace, releaseName)
	if err != nil {
		return err
	}
	if state.Found {
		unlock, err := r.lock.acquire(ctx, ci.Name)
		if err != nil {
			return err
		}
		defer unlock(context.WithoutCancel(ctx))
		if err := r.Helm.Uninstall(namespace, releaseName); err != nil {
			installed(gardencorev1beta1.ConditionFalse, "DeletionFailed", fmt.Sprintf("Deletion of Helm release %q failed: %+v", releaseName, err))
			return err
		}
	}

	ns := &corev1.Namespace{}
	err = r.Target.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		installed(gardencorev1beta1.ConditionFalse, "DeletionFailed", fmt.Sprintf("Deletion of Namespace %q failed: %+v", namespace, err))
		return err
	default:
		if ns.DeletionTimestamp == nil {
			if err := r.Target.Writer.Delete(ctx, ns); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				installed(gardencorev1beta1.ConditionFalse, "DeletionFailed", fmt.Sprintf("Deletion of Namespace %q failed: %+v", namespace, err))
				return err
			}
		}
		// The namespace's end causes no garden event: the next sweep looks again (gardenlet
		// requeues after 5s).
		installed(gardencorev1beta1.ConditionFalse, "DeletionPending", fmt.Sprintf("Deletion of Namespace %q is still pending.", namespace))
		return nil
	}

	installed(gardencorev1beta1.ConditionFalse, "DeletionSuccessful", "Deletion of old resources succeeded.")
	if err := r.patchConditions(ctx, ci, *updates); err != nil {
		return err
	}
	*updates = nil
	if _, err := r.Source.Writer.Patch(ctx, ci, func() { controllerutil.RemoveFinalizer(ci, FinalizerName) }); err != nil {
		return fmt.Errorf("failed to remove finalizer: %w", err)
	}
	return nil
}

// patchConditions merges the decided conditions into the installation's status; a patch that
// changes nothing sends nothing.
func (r *Reconciler) patchConditions(ctx context.Context, ci *gardencorev1beta1.ControllerInstallation, updates []conditionUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	_, err := r.Source.Writer.PatchStatus(ctx, ci, func() {
		for _, u := range updates {
			ci.Status.Conditions = function.SetCondition(r.Clock, ci.Status.Conditions, u.Type, u.Status, u.Reason, u.Message)
		}
	})
	if apierrors.IsNotFound(err) {
		return nil // released and gone
	}
	return err
}

// pull fetches the chart an OCI repository names, with the pull secret it names: a Secret in the
// garden namespace labelled as a Helm pull secret (gardenlet only sees those). The Secret is
// read only when the registry is asked, live from the garden, never from a sweep's snapshot
// (which holds the seed's Secrets).
func (r *Reconciler) pull(ctx context.Context, oci *gardencorev1beta1.OCIRepository) (chartpkg.Pulled, error) {
	if oci == nil {
		return chartpkg.Pulled{}, errors.New("the ControllerDeployment names neither a chart nor an OCI repository")
	}
	return r.Charts.Pull(ctx, oci, func(ctx context.Context) ([]byte, error) {
		if oci.PullSecretRef == nil {
			return nil, nil
		}
		secret := &corev1.Secret{}
		key := client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: oci.PullSecretRef.Name}
		if err := r.Source.Reader.Get(ctx, key, secret); err != nil {
			return nil, fmt.Errorf("failed to get pull secret %s: %w", key, err)
		}
		if secret.Labels[v1beta1constants.GardenRole] != v1beta1constants.GardenRoleHelmPullSecret {
			return nil, fmt.Errorf("pull secret %s is not labelled %s=%s", key, v1beta1constants.GardenRole, v1beta1constants.GardenRoleHelmPullSecret)
		}
		dockerConfig := secret.Data[corev1.DockerConfigJsonKey]
		if dockerConfig == nil {
			return nil, fmt.Errorf("pull secret %s is missing the data key %s", key, corev1.DockerConfigJsonKey)
		}
		return dockerConfig, nil
	})
}

// ensureNamespace creates the release namespace with Gardener's metadata, or patches what
// differs.
func (r *Reconciler) ensureNamespace(ctx context.Context, seedReader client.Reader, name string, want NamespaceMeta) error {
	ns := &corev1.Namespace{}
	err := seedReader.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want.Labels, Annotations: want.Annotations}}
		if err = r.Target.Writer.Create(ctx, ns); !apierrors.IsAlreadyExists(err) {
			return err
		}
		// It exists without the extension role (the snapshot lists only those): read it live.
		ns = &corev1.Namespace{}
		err = r.Target.Reader.Get(ctx, client.ObjectKey{Name: name}, ns)
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s on the seed is being deleted", name)
	}
	_, err = r.Target.Writer.Patch(ctx, ns, func() {
		for k, v := range want.Labels {
			metav1.SetMetaDataLabel(&ns.ObjectMeta, k, v)
		}
		for k, v := range want.Annotations {
			metav1.SetMetaDataAnnotation(&ns.ObjectMeta, k, v)
		}
		for _, k := range want.RemovedLabels {
			delete(ns.Labels, k)
		}
	})
	return err
}

// decodeHelm reads a v1beta1 ControllerDeployment's Helm providerConfig.
func decodeHelm(d *gardencorev1beta1.ControllerDeployment) (*gardencorev1beta1.HelmControllerDeployment, error) {
	helm := &gardencorev1beta1.HelmControllerDeployment{}
	if len(d.ProviderConfig.Raw) == 0 {
		return helm, nil
	}
	if err := json.Unmarshal(d.ProviderConfig.Raw, helm); err != nil {
		return nil, fmt.Errorf("the Helm deployment's providerConfig cannot be decoded: %w", err)
	}
	return helm, nil
}

// render renders the chart's templates offline, as gardenlet's chart renderer does before it
// deploys: a chart that cannot be rendered makes the installation invalid, not failed.
func render(chrt *chart.Chart, values map[string]any, name, namespace string) error {
	toRender, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	_, err = engine.Render(chrt, toRender)
	return err
}

// ReleaseState is what Helm's latest release record says, read from its labels.
type ReleaseState struct {
	Found       bool
	Revision    int
	Status      release.Status
	Checksum    string
	Description string
	// Since is when the record last changed.
	Since time.Time
}

// releaseState reads the labels of the release's latest record (metadata only).
func releaseState(ctx context.Context, seedReader client.Reader, namespace, name string) (ReleaseState, error) {
	records := &metav1.PartialObjectMetadataList{}
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := seedReader.List(ctx, records, client.InNamespace(namespace), client.MatchingLabels{helmrelease.LabelOwner: helmrelease.OwnerHelm, helmrelease.LabelName: name}); err != nil {
		return ReleaseState{}, err
	}
	return LatestRelease(records.Items), nil
}

// LatestRelease is the state of the record with the highest revision.
func LatestRelease(records []metav1.PartialObjectMetadata) ReleaseState {
	var latest ReleaseState
	for _, rec := range records {
		revision, err := strconv.Atoi(rec.Labels[helmrelease.LabelVersion])
		if err != nil || revision <= latest.Revision {
			continue
		}
		latest = ReleaseState{Found: true, Revision: revision, Status: release.Status(rec.Labels[helmrelease.LabelStatus]), Checksum: rec.Labels[LabelChecksum]}
		for _, label := range []string{helmrelease.LabelCreatedAt, helmrelease.LabelModifiedAt} {
			if unix, err := strconv.ParseInt(rec.Labels[label], 10, 64); err == nil && time.Unix(unix, 0).After(latest.Since) {
				latest.Since = time.Unix(unix, 0)
			}
		}
	}
	return latest
}

// releaseConditions are Installed, Healthy and Progressing derived from the release's status,
// with the reasons gardenlet's care controller derives from its ManagedResource.
func releaseConditions(state ReleaseState, name string) []conditionUpdate {
	cond := func(t gardencorev1beta1.ConditionType, s gardencorev1beta1.ConditionStatus, reason, message string) conditionUpdate {
		return conditionUpdate{t, s, reason, message}
	}
	const (
		installedT   = gardencorev1beta1.ControllerInstallationInstalled
		healthyT     = gardencorev1beta1.ControllerInstallationHealthy
		progressingT = gardencorev1beta1.ControllerInstallationProgressing
		isTrue       = gardencorev1beta1.ConditionTrue
		isFalse      = gardencorev1beta1.ConditionFalse
	)
	switch {
	case !state.Found:
		msg := fmt.Sprintf("Installation of Helm release %q is still pending.", name)
		return []conditionUpdate{cond(installedT, isFalse, "InstallationPending", msg)}
	case state.Status == release.StatusDeployed:
		return []conditionUpdate{
			cond(installedT, isTrue, "InstallationSuccessful", "The controller was successfully installed in the seed cluster."),
			cond(healthyT, isTrue, "ControllerHealthy", "The controller running in the seed cluster is healthy."),
			cond(progressingT, isFalse, "ControllerRolledOut", "The controller has been rolled out successfully."),
		}
	case state.Status == release.StatusFailed:
		msg := fmt.Sprintf("Helm release %q revision %d failed", name, state.Revision)
		if state.Description != "" {
			msg += ": " + state.Description
		}
		return []conditionUpdate{
			cond(installedT, isFalse, "InstallationFailed", msg),
			cond(healthyT, isFalse, "ControllerNotHealthy", msg),
			cond(progressingT, isFalse, "ControllerNotRolledOut", msg),
		}
	default: // pending-install, pending-upgrade, pending-rollback, uninstalling, superseded
		msg := fmt.Sprintf("Helm release %q revision %d is %s.", name, state.Revision, state.Status)
		return []conditionUpdate{
			cond(installedT, isFalse, "InstallationPending", msg),
			cond(healthyT, isFalse, "ControllerNotHealthy", msg),
			cond(progressingT, isTrue, "ControllerNotRolledOut", msg),
		}
	}
}
