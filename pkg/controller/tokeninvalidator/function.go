// Package tokeninvalidator is GRM's TokenInvalidator controller as a function (Gardener v1.113's,
// the last release that shipped it): every static ServiceAccount token Secret of the target gets
// the purpose label that routes it through the token-invalidator webhook, and, while its
// ServiceAccount sets automountServiceAccountToken: false (and is not labelled skip), the consider
// label that makes the webhook invalidate its token, on every write. When the ServiceAccount stops
// opting out, the label goes and the webhook removes the invalid token, so that
// kube-controller-manager issues a valid one again.
package tokeninvalidator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

// Config is the token invalidator's part of the ResourceManagerConfiguration, overridden by the
// environment.
type Config struct {
	// Enabled is controllers.tokenInvalidator.enabled and webhooks.tokenInvalidator.enabled
	// (v1.113's keys): labelling Secrets for a webhook that is not served would only block
	// their writes, so the controller runs only with both, as Gardener always set them.
	Enabled bool `envconfig:"TOKEN_INVALIDATOR_ENABLED"`
	// Namespaces is targetClientConnection.namespaces: the namespaces of the target whose Secrets
	// it labels, all when empty. Gardener's controller sees only those (its target cache is
	// confined to them); a shoot's resource manager has kube-system, kubernetes-dashboard and
	// kube-node-lease, so a shoot owner's own ServiceAccounts elsewhere keep their tokens.
	Namespaces []string `envconfig:"TARGET_NAMESPACES"`
}

// FromResourceManager takes the settings from the file.
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.Enabled = rm.Extensions.Controllers.TokenInvalidator.Enabled && rm.Extensions.Webhooks.TokenInvalidator.Enabled
	if rm.TargetClientConnection != nil {
		c.Namespaces = rm.TargetClientConnection.Namespaces
	}
}

// serves says whether the Secrets of the target's namespace are the invalidator's.
func (c *Config) serves(namespace string) bool {
	return len(c.Namespaces) == 0 || slices.Contains(c.Namespaces, namespace)
}

// Function is GRM's TokenInvalidator controller.
var Function = &function.Function{
	Name:       "tokeninvalidator",
	Parts:      []function.Part{function.Seed},
	Config:     &Config{},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// Per seed: the tenants.
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
	},
	// Each tenant's access Secrets, in enrolled tenants' namespaces only.
	TenantRBAC:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	Reconcilers: []function.Reconciler{{Name: "main", For: kinds.Secret, Cluster: function.Target, New: newReconciler}},
	Watches: []function.Watch{
		// Secrets come in Reference mode (no token through the Broker), so the reconciler, not a
		// predicate, drops those that are no ServiceAccount's; deletions need nothing.
		{Kind: kinds.Secret, Cluster: function.Target, Reconciler: "main", Predicate: func(ev function.Event) bool { return !ev.Deleted }},
		{Kind: kinds.ServiceAccount, Cluster: function.Target, Reconciler: "main", Predicate: ServiceAccountPredicate, Map: MapServiceAccountToSecrets},
	},
	Sweeps: []function.Sweep{{
		Name: "resync", Schedule: "*/5 * * * *", Reconciler: "main",
		Off:     func(config any) bool { return !config.(*Config).Enabled },
		Primary: function.List{Kind: kinds.Secret, Cluster: function.Target, MetadataOnly: true},
		Related: []function.List{{Kind: kinds.ServiceAccount, Cluster: function.Target, Project: projectServiceAccount}},
	}},
}

// ServiceAccountPredicate lets through the updates of ServiceAccounts, where automounting or the
// skip label may have changed (Gardener compares both with the old object, which a watch event
// here does not carry).
func ServiceAccountPredicate(ev function.Event) bool { return !ev.Created && !ev.Deleted }

// MapServiceAccountToSecrets maps a ServiceAccount to its token Secrets: those it references
// (Gardener's mapping), and those annotated with its name, which is what a Secret created by hand
// on Kubernetes ≥ 1.24 carries (one metadata-only LIST of the namespace's Secrets).
func MapServiceAccountToSecrets(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	var keys []function.Key
	seen := map[function.Key]bool{}
	add := func(name string) {
		key := function.Key{Namespace: ev.Key.Namespace, Name: name}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	if ev.Object != nil {
		refs, _, _ := unstructured.NestedSlice(ev.Object.Object, "secrets")
		for _, ref := range refs {
			if name, ok := ref.(map[string]any)["name"].(string); ok && name != "" {
				add(name)
			}
		}
	}
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := reader.List(ctx, secrets, client.InNamespace(ev.Key.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the Secrets of ServiceAccount %s: %w", ev.Key, err)
	}
	for _, s := range secrets.Items {
		if s.Annotations[corev1.ServiceAccountNameKey] == ev.Key.Name {
			add(s.Name)
		}
	}
	return keys, nil
}

// projectServiceAccount keeps what the decision reads: labels and automounting.
func projectServiceAccount(obj client.Object) client.Object {
	sa := obj.(*corev1.ServiceAccount)
	return &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name, Labels: sa.Labels, ResourceVersion: sa.ResourceVersion},
		AutomountServiceAccountToken: sa.AutomountServiceAccountToken,
	}
}

// Reconciler labels one Secret.
type Reconciler struct {
	Config *Config
	Target function.ClusterClient
	Log    *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Config: deps.Config.(*Config), Target: deps.Target, Log: deps.Log}, nil
}

// errStillMounted asks for another try (a retryable error: the event is retried, and the sweep
// comes back): a Pod still mounts the static token, which must stay
// valid until it is gone (Gardener requeues likewise).
var errStillMounted = errors.New("a pod still mounts the secret")

// Reconcile brings the Secret's labels in line with its ServiceAccount.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Enabled || !r.Config.serves(req.Key.Namespace) {
		return nil
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := req.Reader.Get(ctx, req.Key, secret); err != nil {
		return err
	}
	saName := secret.Annotations[corev1.ServiceAccountNameKey]
	if saName == "" {
		return nil // no static ServiceAccount token
	}
	sa := &corev1.ServiceAccount{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: secret.Namespace, Name: saName}, sa); err != nil {
		if apierrors.IsNotFound(err) {
			// kube-controller-manager deletes the token Secrets of a ServiceAccount that is gone;
			// one created later is updated, and a sweep comes back to this Secret.
			return function.Terminal(fmt.Errorf("could not fetch ServiceAccount: %w", err))
		}
		return fmt.Errorf("could not fetch ServiceAccount: %w", err)
	}
	decision, stillMounted := Decide(secret.Labels, sa), false
	if decision == Consider {
		var err error
		if stillMounted, err = mountedByPod(ctx, req.Reader, secret); err != nil {
			return err
		}
		if stillMounted {
			decision = Keep
		}
	}
	patched, err := r.Target.Writer.Patch(ctx, secret, func() { apply(&secret.ObjectMeta, decision) })
	if err != nil {
		return err
	}
	if patched {
		r.Log.Info("labelled static ServiceAccount token secret", "secret", req.Key, "serviceAccount", saName,
			"considered", metav1.HasLabel(secret.ObjectMeta, tokeninvalidator.LabelConsider))
	}
	if stillMounted {
		return fmt.Errorf("not invalidating the token of %s yet: %w", req.Key, errStillMounted)
	}
	return nil
}

// Decision is what becomes of a Secret's consider label.
type Decision int

const (
	// Keep leaves the label as it is (set already, or a Pod still mounts the token).
	Keep Decision = iota
	// Consider adds it: the webhook invalidates the token.
	Consider
	// Restore removes it: the webhook removes an invalid token for kube-controller-manager to
	// issue anew.
	Restore
)

// Decide is Gardener's rule on the Secret's labels and its ServiceAccount: the token stays valid
// when the ServiceAccount is labelled skip or does not set automountServiceAccountToken: false;
// otherwise it is invalidated (once no Pod mounts it, which the caller checks).
func Decide(secretLabels map[string]string, sa *corev1.ServiceAccount) Decision {
	if _, skip := sa.Labels[tokeninvalidator.LabelSkip]; skip || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		return Restore
	}
	if _, ok := secretLabels[tokeninvalidator.LabelConsider]; ok {
		return Keep
	}
	return Consider
}

// apply sets the labels: the purpose label that routes the Secret through the webhook (unless the
// Secret has a purpose already), and the consider label as decided.
func apply(meta *metav1.ObjectMeta, d Decision) {
	if !metav1.HasLabel(*meta, resourcesv1alpha1.ResourceManagerPurpose) {
		metav1.SetMetaDataLabel(meta, resourcesv1alpha1.ResourceManagerPurpose, tokeninvalidator.PurposeTokenInvalidation)
	}
	switch d {
	case Consider:
		metav1.SetMetaDataLabel(meta, tokeninvalidator.LabelConsider, "true")
	case Restore:
		delete(meta.Labels, tokeninvalidator.LabelConsider)
	}
}

// mountedByPod says whether a Pod of the Secret's namespace mounts it as a volume: one live LIST,
// only on the way to invalidating a token (sweeps hold no Pods).
func mountedByPod(ctx context.Context, reader client.Reader, secret *metav1.PartialObjectMetadata) (bool, error) {
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(secret.Namespace)); err != nil {
		return false, fmt.Errorf("could not list Pods: %w", err)
	}
	for _, pod := range pods.Items {
		for _, volume := range pod.Spec.Volumes {
			if volume.Secret != nil && volume.Secret.SecretName == secret.Name {
				return true, nil
			}
		}
	}
	return false, nil
}
