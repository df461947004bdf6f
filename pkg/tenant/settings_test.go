package tenant

import (
	"fmt"
	"math"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func shootWith(mutate func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Provider: gardencorev1beta1.Provider{
		Workers: []gardencorev1beta1.Worker{{Name: "a"}},
	}}}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// The values of a default shoot, as gardenlet v1.150's DefaultResourceManager derives them.
func TestSettingsOfADefaultShoot(t *testing.T) {
	seed := &gardencorev1beta1.Seed{Status: gardencorev1beta1.SeedStatus{ClusterIdentity: ptr.To("seed-1")}}
	got := SettingsOf(shootWith(nil), seed)
	assert.Equal(t, Settings{ClusterID: "seed-1", AuthorizeWithSelectors: true, NodeAgentMaxDelay: 5 * time.Minute}, got)
}

// ComputeOutOfClusterAPIServerAddress(true): the internal domain first, else the external one.
func TestKubernetesServiceHost(t *testing.T) {
	for name, tc := range map[string]struct {
		addresses []gardencorev1beta1.ShootAdvertisedAddress
		want      string
	}{
		"none advertised yet": {nil, ""},
		"internal preferred": {[]gardencorev1beta1.ShootAdvertisedAddress{
			{Name: "external", URL: "https://api.s.p.example.com"},
			{Name: "service-account-issuer", URL: "https://issuer.example.com/p/s"},
			{Name: "internal", URL: "https://api.s.p.internal.example.com"},
		}, "api.s.p.internal.example.com"},
		"external without an internal domain": {[]gardencorev1beta1.ShootAdvertisedAddress{{Name: "external", URL: "https://api.s.p.example.com"}}, "api.s.p.example.com"},
		"unmanaged":                           {[]gardencorev1beta1.ShootAdvertisedAddress{{Name: "unmanaged", URL: "https://10.0.0.1"}}, "10.0.0.1"},
		"only the issuer":                     {[]gardencorev1beta1.ShootAdvertisedAddress{{Name: "service-account-issuer", URL: "https://issuer.example.com"}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) { s.Status.AdvertisedAddresses = tc.addresses }), nil)
			assert.Equal(t, tc.want, got.KubernetesServiceHost)
		})
	}
}

// The component enables pod-scheduler-name for a scheduling profile other than balanced.
func TestSchedulerName(t *testing.T) {
	for profile, want := range map[string]string{"": "", "balanced": "", "bin-packing": BinPackingSchedulerName} {
		got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) {
			if profile != "" {
				p := gardencorev1beta1.SchedulingProfile(profile)
				s.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{Profile: &p}
			}
		}), nil)
		assert.Equal(t, want, got.SchedulerName, "profile %q", profile)
	}
	got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) {
		s.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{}
	}), nil)
	assert.Empty(t, got.SchedulerName, "a scheduler configuration without a profile")
}

// IsAuthorizeWithSelectorsEnabled and IsMatchLabelKeysInPodTopologySpreadFeatureGateDisabled.
func TestFeatureGates(t *testing.T) {
	gates := func(apiServer, scheduler map[string]bool) *gardencorev1beta1.Shoot {
		return shootWith(func(s *gardencorev1beta1.Shoot) {
			if apiServer != nil {
				s.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: apiServer}}
			}
			if scheduler != nil {
				s.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: scheduler}}
			}
		})
	}
	assert.True(t, SettingsOf(gates(nil, nil), nil).AuthorizeWithSelectors, "no kube-apiserver configuration")
	assert.True(t, SettingsOf(gates(map[string]bool{}, nil), nil).AuthorizeWithSelectors, "gate unset")
	assert.True(t, SettingsOf(gates(map[string]bool{"AuthorizeWithSelectors": true}, nil), nil).AuthorizeWithSelectors)
	assert.False(t, SettingsOf(gates(map[string]bool{"AuthorizeWithSelectors": false}, nil), nil).AuthorizeWithSelectors)

	const gate = "MatchLabelKeysInPodTopologySpread"
	off, on := map[string]bool{gate: false}, map[string]bool{gate: true}
	for _, tc := range []struct {
		name                 string
		apiServer, scheduler map[string]bool
		want                 bool
	}{
		{"unset in both", nil, nil, false},
		{"off in the kube-apiserver only", off, map[string]bool{}, false},
		{"off in the scheduler only", map[string]bool{}, off, false},
		{"off in both", off, off, true},
		{"off and on", off, on, false},
	} {
		assert.Equal(t, tc.want, SettingsOf(gates(tc.apiServer, tc.scheduler), nil).PodTopologySpreadConstraints, tc.name)
	}
}

// ExtractSystemComponentsTolerations: pools allowing system components (by default) give their
// taints' tolerations, a control-plane pool the control plane's, each once, sorted by key.
func TestSystemComponentTolerations(t *testing.T) {
	taint := func(key, value string) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
	}
	got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) {
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{
			{Name: "default", Taints: []corev1.Taint{taint("zeta", "1"), taint("alpha", "")}},
			{Name: "system", SystemComponents: &gardencorev1beta1.WorkerSystemComponents{Allow: true}, Taints: []corev1.Taint{taint("alpha", "")}},
			{Name: "no-system", SystemComponents: &gardencorev1beta1.WorkerSystemComponents{Allow: false}, Taints: []corev1.Taint{taint("private", "x")}},
			{Name: "control-plane", ControlPlane: &gardencorev1beta1.WorkerControlPlane{}},
		}
	}), nil)
	assert.Equal(t, []corev1.Toleration{
		{Key: "alpha", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists},
		{Key: "zeta", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoSchedule},
	}, got.SystemComponentTolerations)
}

func TestWorkerless(t *testing.T) {
	assert.True(t, SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) { s.Spec.Provider.Workers = nil }), nil).Workerless)
	assert.False(t, SettingsOf(shootWith(nil), nil).Workerless)
}

// NewFromShoot's OSCSyncJitterPeriod.
func TestNodeAgentMaxDelay(t *testing.T) {
	const key = "shoot.gardener.cloud/cloud-config-execution-max-delay-seconds"
	for value, want := range map[string]time.Duration{
		"60": time.Minute, "+60": time.Minute, "1800": 30 * time.Minute, "1801": 5 * time.Minute, "0": 0,
		// gardenlet neither refuses a negative value (GRM then does) nor checks the multiplication.
		"-5": -5 * time.Second, fmt.Sprint(math.MinInt64): 0,
	} {
		got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) {
			s.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{key: value}}
		}), nil)
		require.NoError(t, got.NodeAgentMaxDelayError)
		assert.Equal(t, want, got.NodeAgentMaxDelay, value)
	}
	got := SettingsOf(shootWith(func(s *gardencorev1beta1.Shoot) {
		s.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{key: "10m"}}
	}), nil)
	assert.ErrorContains(t, got.NodeAgentMaxDelayError, key)
}

// A shoot is hibernated from the moment hibernation is asked for until it has woken up.
func TestHibernated(t *testing.T) {
	for name, tc := range map[string]struct {
		enabled *bool
		status  bool
		want    bool
	}{
		"awake":                {nil, false, false},
		"hibernation disabled": {ptr.To(false), false, false},
		"hibernating":          {ptr.To(true), false, true},
		"hibernated":           {ptr.To(true), true, true},
		"waking up":            {ptr.To(false), true, true},
	} {
		shoot := shootWith(func(s *gardencorev1beta1.Shoot) {
			s.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: tc.enabled}
			s.Status.IsHibernated = tc.status
		})
		assert.Equal(t, tc.want, SettingsOf(shoot, nil).Hibernated, name)
	}
}
