// Package projectedtokenmount mounts a projected ServiceAccount token volume into new Pods
// whose ServiceAccount opts out of the kube-apiserver's own token auto-mounting
// (automountServiceAccountToken: false), so that they still find a bound, expiring token
// where client libraries look for it (GRM's projected-token-mount webhook).
package projectedtokenmount

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "projected-token-mount"
	// Path is where Gardener serves it.
	Path = "/webhooks/mount-projected-service-account-token"

	// DefaultExpirationSeconds is the token lifetime when neither the component configuration
	// nor the Pod sets one (12h).
	DefaultExpirationSeconds int64 = 43200
	// VolumeName is the name of the injected volume. Its prefix is the one the kube-apiserver's
	// ServiceAccount admission plugin uses, so that a Pod is never given two token volumes.
	VolumeName = volumePrefix + "gardener"
	// MountPath is where the kube-apiserver mounts tokens and client libraries look for them.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

	volumePrefix = "kube-api-access-"
)

// Config is the webhook's configuration from the environment.
type Config struct {
	// ServiceAccountCacheTTL bounds how long a ServiceAccount's automountServiceAccountToken is
	// reused (0 reads every time). Gardener reads them from an informer cache.
	ServiceAccountCacheTTL time.Duration `envconfig:"PROJECTED_TOKEN_MOUNT_SERVICE_ACCOUNT_CACHE_TTL" default:"5s"`
	// ServiceAccountCacheSize bounds how many ServiceAccounts are remembered.
	ServiceAccountCacheSize int `envconfig:"PROJECTED_TOKEN_MOUNT_SERVICE_ACCOUNT_CACHE_SIZE" default:"10000"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.ProjectedTokenMount.Enabled },
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		// Gardener defaults expirationSeconds only when the webhook is enabled in the file, so
		// a configuration enabled otherwise (e.g. by WEBHOOKS) is defaulted here.
		expiration := ptr.Deref(deps.Config.Webhooks.ProjectedTokenMount.ExpirationSeconds, DefaultExpirationSeconds)
		h, err := NewHandler(deps.Target, expiration, deps.Clock, cfg)
		if err != nil {
			return webhook.Webhook{}, err
		}
		return webhook.Admission(Name, Path, h, deps.Log), nil
	},
}.Constructor()

// Handler mounts the token volume into Pods that meet all preconditions, reading their
// ServiceAccounts with target on every request; expirationSeconds is the default token
// lifetime.
func Handler(target client.Reader, expirationSeconds int64) admission.Handler {
	h, err := NewHandler(target, expirationSeconds, nil, Config{ServiceAccountCacheSize: 1})
	if err != nil {
		panic(err) // unreachable: a zero TTL and size 1 are valid
	}
	return h
}

// NewHandler is Handler with ServiceAccounts cached as cfg says.
//
// Its answers are Gardener's (a CustomDefaulter in controller-runtime): DELETE is allowed
// untouched; an unreadable ServiceAccount is answered with the API error's own status (404
// NotFound for a missing one, 403 Forbidden, ...); any other failure, such as an invalid
// expiration annotation, is a 403 Forbidden denial with the error as message.
func NewHandler(target client.Reader, expirationSeconds int64, clk clock.PassiveClock, cfg Config) (admission.Handler, error) {
	accounts, err := cache.New(cache.Options[*bool]{TTL: cfg.ServiceAccountCacheTTL, Size: cfg.ServiceAccountCacheSize, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("ServiceAccount cache: %w", err)
	}
	automount := func(ctx context.Context, namespace, name string) (*bool, error) {
		return accounts.Get(ctx, namespace+"/"+name, func(ctx context.Context) (*bool, error) {
			sa := &corev1.ServiceAccount{}
			if err := target.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sa); err != nil {
				return nil, err
			}
			return sa.AutomountServiceAccountToken, nil
		})
	}
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Delete {
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, Result: &metav1.Status{Code: http.StatusOK}}}
		}
		pod := &corev1.Pod{}
		decoded, err := webhook.Decode(req, pod)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		mounted, err := mountIfWanted(ctx, automount, req.Namespace, pod, expirationSeconds)
		if err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: ptr.To(status.Status())}}
			}
			return admission.Denied(err.Error())
		}
		if !mounted {
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true}}
		}
		return webhook.Patch(req, decoded, pod)
	}), nil
}

// automountFunc tells a ServiceAccount's automountServiceAccountToken.
type automountFunc func(ctx context.Context, namespace, name string) (*bool, error)

// mountIfWanted mounts the token volume when the Pod meets all preconditions, checked in
// Gardener's order: the ServiceAccount is read before the Pod's own opt-outs are looked at,
// so that a Pod naming a missing ServiceAccount is refused whatever else it sets. The
// namespace is the request's: a Pod being created may not carry one yet
// (kubernetes/kubernetes#88282).
func mountIfWanted(ctx context.Context, automount automountFunc, namespace string, pod *corev1.Pod, defaultExpirationSeconds int64) (bool, error) {
	// Gardener's registration never sends skipped Pods; a misregistered one still leaves
	// them alone.
	if pod.Labels[resourcesv1alpha1.ProjectedTokenSkip] == "true" {
		return false, nil
	}
	if name := pod.Spec.ServiceAccountName; name == "" || name == "default" {
		return false, nil
	}
	saAutomount, err := automount(ctx, namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return false, err
	}
	if saAutomount == nil || *saAutomount {
		return false, nil
	}
	// A Pod that explicitly refuses a token gets none.
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return false, nil
	}
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, volumePrefix) {
			return false, nil
		}
	}
	expiration, err := tokenExpirationSeconds(pod, defaultExpirationSeconds)
	if err != nil {
		return false, err
	}
	mount(pod, expiration)
	return true, nil
}

// tokenExpirationSeconds is the Pod's annotation, else the default; an annotation that is no
// integer fails with strconv's error, which Gardener returns as the denial's message.
func tokenExpirationSeconds(pod *corev1.Pod, fallback int64) (int64, error) {
	if v, ok := pod.Annotations[resourcesv1alpha1.ProjectedTokenExpirationSeconds]; ok {
		return strconv.ParseInt(v, 10, 64)
	}
	return fallback, nil
}

// mount adds the volume and mounts it read-only into every init container and container.
func mount(pod *corev1.Pod, expirationSeconds int64) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, volume(expirationSeconds))
	m := corev1.VolumeMount{Name: VolumeName, MountPath: MountPath, ReadOnly: true}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, m)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, m)
	}
}

// volume is what the kube-apiserver's ServiceAccount admission plugin would mount: the token,
// the cluster's CA bundle and the Pod's namespace.
func volume(expirationSeconds int64) corev1.Volume {
	return corev1.Volume{
		Name: VolumeName,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o644),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expirationSeconds, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}}}},
			},
		}},
	}
}
