// Package projectedtokenmount mounts a projected ServiceAccount token volume into new Pods
// whose ServiceAccount opts out of the kube-apiserver's own token auto-mounting
// (automountServiceAccountToken: false), so that they still find a bound, expiring token
// where client libraries look for it (GRM's projected-token-mount webhook).
package projectedtokenmount

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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

// Webhook is the constructor the server registers.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(c *rmv1alpha1.ResourceManagerConfiguration) bool { return c.Webhooks.ProjectedTokenMount.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		// Gardener defaults expirationSeconds only when the webhook is enabled in the file, so
		// a configuration enabled otherwise (e.g. by WEBHOOKS) is defaulted here.
		expiration := ptr.Deref(deps.Config.Webhooks.ProjectedTokenMount.ExpirationSeconds, DefaultExpirationSeconds)
		return webhook.Admission(Name, Path, Handler(deps.Target, expiration), deps.Log), nil
	},
}

// Handler mounts the token volume into Pods that meet all preconditions, reading their
// ServiceAccounts with target; expirationSeconds is the default token lifetime.
func Handler(target client.Reader, expirationSeconds int64) admission.Handler {
	return webhook.Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, req admission.Request, pod *corev1.Pod) error {
		ok, err := wantsToken(ctx, target, req.Namespace, pod)
		if err != nil || !ok {
			return err
		}
		expiration, err := tokenExpirationSeconds(pod, expirationSeconds)
		if err != nil {
			return err
		}
		mount(pod, expiration)
		return nil
	})
}

// wantsToken checks the preconditions, cheapest first so that most Pods cost no API call.
// The namespace is the request's: a Pod being created may not carry one yet
// (kubernetes/kubernetes#88282).
func wantsToken(ctx context.Context, target client.Reader, namespace string, pod *corev1.Pod) (bool, error) {
	if pod.Labels[resourcesv1alpha1.ProjectedTokenSkip] == "true" {
		return false, nil
	}
	if name := pod.Spec.ServiceAccountName; name == "" || name == "default" {
		return false, nil
	}
	// A Pod that explicitly refuses a token gets none, as Gardener's handler decides.
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return false, nil
	}
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, volumePrefix) {
			return false, nil
		}
	}
	sa := &corev1.ServiceAccount{}
	if err := target.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod.Spec.ServiceAccountName}, sa); err != nil {
		return false, fmt.Errorf("reading ServiceAccount %s/%s: %w", namespace, pod.Spec.ServiceAccountName, err)
	}
	return sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken, nil
}

func tokenExpirationSeconds(pod *corev1.Pod, fallback int64) (int64, error) {
	v, ok := pod.Annotations[resourcesv1alpha1.ProjectedTokenExpirationSeconds]
	if !ok {
		return fallback, nil
	}
	seconds, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %w", resourcesv1alpha1.ProjectedTokenExpirationSeconds, err)
	}
	return seconds, nil
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
