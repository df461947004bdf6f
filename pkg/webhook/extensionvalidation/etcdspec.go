package extensionvalidation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdSpec is the shape of etcd-druid's EtcdSpec (druid.gardener.cloud/v1alpha1, etcd-druid api
// v0.38.1, the version Gardener v1.150 validates with), written out here because druid's API
// module is not a dependency of this one. It serves two purposes:
//   - While an Etcd is being deleted, druid refuses any change of the spec by comparing typed
//     values semantically: quantities by value (10Gi = 10240Mi), durations by length
//     (12h = 720m), an absent struct like an empty one. Decoding into the same shape and
//     comparing with apimachinery's semantic equality answers the same.
//   - Druid reports such a change with the new spec as JSON; with the same members in the
//     same order and omitempty, the JSON here is the same.
//
// Its JSON members are exactly those of druid's EtcdSpec with the k8s.io/api v0.36 types it
// embeds (Gardener v1.150's), checked member by member: whatever this shape drops on decoding,
// druid's decoding drops too, so a change of it is no change for druid either.
type etcdSpec struct {
	MemberNamePrefix                 *string               `json:"memberNamePrefix,omitempty"`
	Selector                         *metav1.LabelSelector `json:"selector"`
	Labels                           map[string]string     `json:"labels"`
	Annotations                      map[string]string     `json:"annotations,omitempty"`
	Etcd                             etcdConfig            `json:"etcd"`
	Backup                           etcdBackup            `json:"backup"`
	SharedConfig                     etcdSharedConfig      `json:"sharedConfig,omitempty"`
	SchedulingConstraints            etcdScheduling        `json:"schedulingConstraints,omitempty"`
	Replicas                         int32                 `json:"replicas"`
	PriorityClassName                *string               `json:"priorityClassName,omitempty"`
	StorageClass                     *string               `json:"storageClass,omitempty"`
	StorageCapacity                  *resource.Quantity    `json:"storageCapacity,omitempty"`
	VolumeClaimTemplate              *string               `json:"volumeClaimTemplate,omitempty"`
	RunAsRoot                        *bool                 `json:"runAsRoot,omitempty"`
	ExternallyManagedMemberAddresses []string              `json:"externallyManagedMemberAddresses,omitempty"`
}

type etcdConfig struct {
	Quota                        *resource.Quantity            `json:"quota,omitempty"`
	SnapshotCount                *int64                        `json:"snapshotCount,omitempty"`
	EnableGRPCGateway            *bool                         `json:"enableGRPCGateway,omitempty"`
	DefragmentationSchedule      *string                       `json:"defragmentationSchedule,omitempty"`
	ServerPort                   *int32                        `json:"serverPort,omitempty"`
	ClientPort                   *int32                        `json:"clientPort,omitempty"`
	WrapperPort                  *int32                        `json:"wrapperPort,omitempty"`
	Image                        *string                       `json:"image,omitempty"`
	AuthSecretRef                *corev1.SecretReference       `json:"authSecretRef,omitempty"`
	Metrics                      *string                       `json:"metrics,omitempty"`
	Resources                    *corev1.ResourceRequirements  `json:"resources,omitempty"`
	ClientURLTLS                 *etcdTLS                      `json:"clientUrlTls,omitempty"`
	AdditionalAdvertisePeerURLs  []etcdMemberPeerURLs          `json:"additionalAdvertisePeerURLs,omitempty"`
	PeerURLTLS                   *etcdPeerTLS                  `json:"peerUrlTls,omitempty"`
	EtcdDefragTimeout            *metav1.Duration              `json:"etcdDefragTimeout,omitempty"`
	HeartbeatDuration            *metav1.Duration              `json:"heartbeatDuration,omitempty"`
	ClientService                *etcdClientService            `json:"clientService,omitempty"`
	BackendBboltFreelistType     *string                       `json:"backendBboltFreelistType,omitempty"`
	BootstrapWithExistingCluster *etcdBootstrapExistingCluster `json:"bootstrapWithExistingCluster,omitempty"`
}

type etcdTLS struct {
	TLSCASecretRef     etcdSecretReference    `json:"tlsCASecretRef"`
	ServerTLSSecretRef corev1.SecretReference `json:"serverTLSSecretRef"`
	ClientTLSSecretRef corev1.SecretReference `json:"clientTLSSecretRef"`
}

type etcdPeerTLS struct {
	etcdTLS                   `json:",inline"`
	SkipClientSANVerification *bool `json:"skipClientSANVerification,omitempty"`
}

type etcdSecretReference struct {
	corev1.SecretReference `json:",inline"`
	DataKey                *string `json:"dataKey,omitempty"`
}

type etcdMemberPeerURLs struct {
	MemberName string   `json:"memberName"`
	URLs       []string `json:"urls"`
}

type etcdClientService struct {
	Annotations         map[string]string `json:"annotations,omitempty"`
	Labels              map[string]string `json:"labels,omitempty"`
	TrafficDistribution *string           `json:"trafficDistribution,omitempty"`
}

type etcdBootstrapExistingCluster struct {
	Members         []etcdExistingMember `json:"members"`
	ClientEndpoints []string             `json:"clientEndpoints"`
}

type etcdExistingMember struct {
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerUrls"`
}

type etcdBackup struct {
	Port                         *int32                       `json:"port,omitempty"`
	TLS                          *etcdTLS                     `json:"tls,omitempty"`
	Image                        *string                      `json:"image,omitempty"`
	Store                        *etcdStore                   `json:"store,omitempty"`
	Resources                    *corev1.ResourceRequirements `json:"resources,omitempty"`
	SnapshotCompaction           *etcdSnapshotCompaction      `json:"snapshotCompaction,omitempty"`
	FullSnapshotSchedule         *string                      `json:"fullSnapshotSchedule,omitempty"`
	GarbageCollectionPolicy      *string                      `json:"garbageCollectionPolicy,omitempty"`
	MaxBackupsLimitBasedGC       *int32                       `json:"maxBackupsLimitBasedGC,omitempty"`
	GarbageCollectionPeriod      *metav1.Duration             `json:"garbageCollectionPeriod,omitempty"`
	DeltaSnapshotPeriod          *metav1.Duration             `json:"deltaSnapshotPeriod,omitempty"`
	DeltaSnapshotMemoryLimit     *resource.Quantity           `json:"deltaSnapshotMemoryLimit,omitempty"`
	DeltaSnapshotRetentionPeriod *metav1.Duration             `json:"deltaSnapshotRetentionPeriod,omitempty"`
	Compression                  *etcdCompression             `json:"compression,omitempty"`
	EnableProfiling              *bool                        `json:"enableProfiling,omitempty"`
	EtcdSnapshotTimeout          *metav1.Duration             `json:"etcdSnapshotTimeout,omitempty"`
	LeaderElection               *etcdLeaderElection          `json:"leaderElection,omitempty"`
}

type etcdStore struct {
	Container        *string                 `json:"container,omitempty"`
	EndpointOverride *string                 `json:"endpointOverride,omitempty"`
	Prefix           string                  `json:"prefix"`
	Provider         *string                 `json:"provider,omitempty"`
	SecretRef        *corev1.SecretReference `json:"secretRef,omitempty"`
}

type etcdSnapshotCompaction struct {
	Resources                    *corev1.ResourceRequirements `json:"resources,omitempty"`
	EventsThreshold              *int64                       `json:"eventsThreshold,omitempty"`
	TriggerFullSnapshotThreshold *int64                       `json:"triggerFullSnapshotThreshold,omitempty"`
}

type etcdCompression struct {
	Enabled *bool   `json:"enabled,omitempty"`
	Policy  *string `json:"policy,omitempty"`
}

type etcdLeaderElection struct {
	ReelectionPeriod      *metav1.Duration `json:"reelectionPeriod,omitempty"`
	EtcdConnectionTimeout *metav1.Duration `json:"etcdConnectionTimeout,omitempty"`
}

type etcdSharedConfig struct {
	AutoCompactionMode      *string `json:"autoCompactionMode,omitempty"`
	AutoCompactionRetention *string `json:"autoCompactionRetention,omitempty"`
}

type etcdScheduling struct {
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
}
