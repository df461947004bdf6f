package tenant

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// Settings are the values gardenlet (v1.150) configures one shoot's gardener-resource-manager
// with that differ from shoot to shoot: DefaultResourceManager in gardenlet's botanist, rendered
// into the shoot's ResourceManagerConfiguration by the resource-manager component. A deployment
// that serves every shoot of a seed takes them from each tenant's Cluster (SettingsOf), so that
// every shoot is served as gardenlet would have configured its own resource manager.
//
// A Settings value is shared by every request of its tenant: it is never changed once derived.
type Settings struct {
	// ClusterID is controllers.clusterID: the identity of the seed the shoot runs on
	// (spec.seed.status.clusterIdentity of the Cluster).
	ClusterID string
	// Workerless says the shoot has no worker pools: gardenlet then turns off the CSR approver,
	// the node-critical-components controller and ten webhooks (disableControllersAndWebhooksForWorkerlessShoot).
	Workerless bool
	// KubernetesServiceHost is webhooks.kubernetesServiceHost.host: the shoot's API server
	// address out of the cluster, preferring the internal domain
	// (ComputeOutOfClusterAPIServerAddress(true)), as the shoot advertises it. Empty while the
	// shoot advertises none yet: the webhook then has nothing to inject.
	KubernetesServiceHost string
	// SchedulerName is webhooks.podSchedulerName.schedulerName, set only where gardenlet enables
	// the webhook: for a scheduling profile other than balanced (bin-packing).
	SchedulerName string
	// AuthorizeWithSelectors is webhooks.nodeAgentAuthorizer.authorizeWithSelectors: the shoot's
	// kube-apiserver feature gate AuthorizeWithSelectors, true when unset
	// (IsAuthorizeWithSelectorsEnabled).
	AuthorizeWithSelectors bool
	// SystemComponentTolerations is webhooks.systemComponentsConfig.podTolerations: tolerations
	// of the taints of every worker pool that allows system components, and of the control plane
	// where a pool runs it (ExtractSystemComponentsTolerations), sorted by key.
	SystemComponentTolerations []corev1.Toleration
	// PodTopologySpreadConstraints is webhooks.podTopologySpreadConstraints.enabled: only when the
	// feature gate MatchLabelKeysInPodTopologySpread is off in both the shoot's kube-apiserver and
	// kube-scheduler (IsMatchLabelKeysInPodTopologySpreadFeatureGateDisabled).
	PodTopologySpreadConstraints bool
	// NodeAgentMaxDelay is controllers.nodeAgentReconciliationDelay.maxDelay: the Shoot's
	// annotation shoot.gardener.cloud/cloud-config-execution-max-delay-seconds (300s without it,
	// at most 1800s: 300s above), as gardenlet reads it. NodeAgentMaxDelayError says why there is
	// none: an annotation that is no integer fails gardenlet's reconciliation of the Shoot.
	NodeAgentMaxDelay      time.Duration
	NodeAgentMaxDelayError error
	// Hibernated is no setting of the resource manager's: it says that the shoot's control plane
	// is hibernated or on its way (spec.hibernation.enabled, or status.isHibernated while it
	// wakes up), so that its kube-apiserver may not answer. gardenlet scales the shoot's own
	// resource manager down with it.
	Hibernated bool
}

// HasWorkers tells whether the shoot has worker pools: gardenlet runs the controllers and
// webhooks of Nodes and Pods only then.
func (s *Settings) HasWorkers() bool { return !s.Workerless }

const (
	// BinPackingSchedulerName is the scheduler of the bin-packing profile (gardenlet's kube-scheduler component).
	BinPackingSchedulerName = "bin-packing-scheduler"
	// defaultNodeAgentMaxDelay and maxNodeAgentMaxDelay bound the node agents' delay as gardenlet does.
	defaultNodeAgentMaxDelay = 300
	maxNodeAgentMaxDelay     = 1800
	// controlPlaneTaint is tolerated by system components where a worker pool runs the control plane.
	controlPlaneTaint = "node-role.kubernetes.io/control-plane"
)

// SettingsOf derives a tenant's settings from the Shoot and Seed its Cluster holds, as gardenlet
// v1.150 derives them for the shoot's resource manager (each field names the function it follows).
func SettingsOf(shoot *gardencorev1beta1.Shoot, seed *gardencorev1beta1.Seed) Settings {
	s := Settings{
		Workerless:                   len(shoot.Spec.Provider.Workers) == 0,
		KubernetesServiceHost:        apiServerHost(shoot.Status.AdvertisedAddresses),
		AuthorizeWithSelectors:       authorizeWithSelectors(shoot.Spec.Kubernetes.KubeAPIServer),
		SystemComponentTolerations:   systemComponentTolerations(shoot.Spec.Provider.Workers),
		PodTopologySpreadConstraints: matchLabelKeysDisabled(shoot.Spec.Kubernetes),
		Hibernated:                   ptr.Deref(ptr.Deref(shoot.Spec.Hibernation, gardencorev1beta1.Hibernation{}).Enabled, false) || shoot.Status.IsHibernated,
	}
	if seed != nil {
		s.ClusterID = ptr.Deref(seed.Status.ClusterIdentity, "")
	}
	if scheduler := shoot.Spec.Kubernetes.KubeScheduler; scheduler != nil && scheduler.Profile != nil && *scheduler.Profile != gardencorev1beta1.SchedulingProfileBalanced {
		s.SchedulerName = BinPackingSchedulerName
	}
	s.NodeAgentMaxDelay, s.NodeAgentMaxDelayError = nodeAgentMaxDelay(shoot.Annotations)
	return s
}

// apiServerHost is the host of the address gardenlet injects: the internal domain's, else the
// external domain's, else an unmanaged one's (the order of ComputeOutOfClusterAPIServerAddress
// and ToAdvertisedAddresses).
func apiServerHost(addresses []gardencorev1beta1.ShootAdvertisedAddress) string {
	for _, name := range []string{v1beta1constants.AdvertisedAddressInternal, v1beta1constants.AdvertisedAddressExternal, v1beta1constants.AdvertisedAddressUnmanaged} {
		for _, a := range addresses {
			if a.Name != name {
				continue
			}
			if u, err := url.Parse(a.URL); err == nil && u.Hostname() != "" {
				return u.Hostname()
			}
		}
	}
	return ""
}

// authorizeWithSelectors is IsAuthorizeWithSelectorsEnabled: the gate's value, true when unset.
func authorizeWithSelectors(kubeAPIServer *gardencorev1beta1.KubeAPIServerConfig) bool {
	if kubeAPIServer == nil {
		return true
	}
	enabled, ok := kubeAPIServer.FeatureGates["AuthorizeWithSelectors"]
	return !ok || enabled
}

// matchLabelKeysDisabled is IsMatchLabelKeysInPodTopologySpreadFeatureGateDisabled: the gate is
// set to false in both components (unset is on).
func matchLabelKeysDisabled(k gardencorev1beta1.Kubernetes) bool {
	const gate = "MatchLabelKeysInPodTopologySpread"
	if k.KubeAPIServer == nil || k.KubeScheduler == nil {
		return false
	}
	apiServer, ok := k.KubeAPIServer.FeatureGates[gate]
	if !ok {
		return false
	}
	scheduler, ok := k.KubeScheduler.FeatureGates[gate]
	return ok && !apiServer && !scheduler
}

// systemComponentTolerations is ExtractSystemComponentsTolerations: the distinct tolerations of
// the taints of pools that allow system components (allowed unless said otherwise), and the
// control plane's where a pool runs it, sorted by key (a stable sort: equal keys keep the order
// of the pools, where Gardener's set leaves it undefined).
func systemComponentTolerations(workers []gardencorev1beta1.Worker) []corev1.Toleration {
	var out []corev1.Toleration
	for _, w := range workers {
		if w.ControlPlane != nil {
			out = kube.AppendToleration(out, corev1.Toleration{Key: controlPlaneTaint, Operator: corev1.TolerationOpExists})
		}
		if w.SystemComponents != nil && !w.SystemComponents.Allow {
			continue
		}
		for _, taint := range w.Taints {
			out = kube.AppendToleration(out, kube.TolerationForTaint(taint))
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Toleration) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// nodeAgentMaxDelay reads the Shoot's annotation as gardenlet does (NewFromShoot): 300s without
// it, the annotated seconds up to 1800, 300s above; a value that is no integer is an error.
func nodeAgentMaxDelay(annotations map[string]string) (time.Duration, error) {
	seconds := defaultNodeAgentMaxDelay
	if v, ok := annotations[v1beta1constants.AnnotationShootCloudConfigExecutionMaxDelaySeconds]; ok {
		s, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("annotation %s: %w", v1beta1constants.AnnotationShootCloudConfigExecutionMaxDelaySeconds, err)
		}
		if s <= maxNodeAgentMaxDelay {
			seconds = s
		}
	}
	// gardenlet's conversion, overflow included.
	return time.Duration(seconds) * time.Second, nil
}

type settingsKey struct{}

// WithSettings returns ctx for a request of a tenant with settings s (the runtime sets them
// beside the tenant's name, With).
func WithSettings(ctx context.Context, s *Settings) context.Context {
	return context.WithValue(ctx, settingsKey{}, s)
}

// SettingsFrom returns the settings of the request's tenant; ok is false outside a tenant's
// request (single-tenant mode, or the seed's own requests).
func SettingsFrom(ctx context.Context) (s *Settings, ok bool) {
	s, ok = ctx.Value(settingsKey{}).(*Settings)
	return s, ok && s != nil
}
