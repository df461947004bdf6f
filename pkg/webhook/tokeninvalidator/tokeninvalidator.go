// Package tokeninvalidator is GRM's token-invalidator mutating webhook: a static ServiceAccount
// token Secret that the tokeninvalidator function labelled for consideration (its ServiceAccount
// sets automountServiceAccountToken: false) gets an invalid token, on creation and on every
// regeneration; once the label is gone, an invalidated token is removed so that
// kube-controller-manager's token controller issues a valid one again.
//
// Gardener removed the TokenInvalidator after v1.113; this is v1.113's, the last release that
// shipped it, which the resource manager's documentation still describes.
package tokeninvalidator

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name (Gardener's handler name).
	Name = "token-invalidator"
	// Path is where Gardener served it.
	Path = "/webhooks/invalidate-service-account-token-secret"
)

// The labels of the TokenInvalidator (resources.gardener.cloud; gone from Gardener's API
// package with the controller).
const (
	// LabelConsider on a Secret asks the webhook to invalidate its token.
	LabelConsider = "token-invalidator.resources.gardener.cloud/consider"
	// LabelSkip on a ServiceAccount keeps its static tokens valid although it opts out of
	// automounting.
	LabelSkip = "token-invalidator.resources.gardener.cloud/skip"
	// PurposeTokenInvalidation is the resources.gardener.cloud/purpose label value of the Secrets
	// the webhook's registration selects.
	PurposeTokenInvalidation = "token-invalidator"
)

// InvalidToken is what an invalidated token reads: no kube-apiserver accepts it as a JWT.
var InvalidToken = []byte("\u0000\u0000\u0000")

// Webhook is the constructor the server registers. webhooks.tokenInvalidator.enabled is v1.113's
// key, which v1.150's configuration type lacks; the file is decoded leniently for it.
var Webhook = webhook.Configured[struct{}]{
	Name: Name,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool {
		return c.Extensions.Webhooks.TokenInvalidator.Enabled
	},
	Build: func(deps webhook.Deps, _ struct{}) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(), deps.Log), nil
	},
}.Constructor()

// Handler invalidates the token of a Secret labelled for consideration, and removes an invalid
// token from one that is not (any more). Nothing is read from any cluster.
func Handler() admission.Handler {
	decoder := admission.NewDecoder(kubernetesscheme.Scheme)
	return webhook.Defaulter(decoder, func() *corev1.Secret { return &corev1.Secret{} }, func(_ context.Context, _ admission.Request, secret *corev1.Secret) error {
		Invalidate(secret)
		return nil
	})
}

// Invalidate is the webhook's decision on one Secret, in place.
func Invalidate(secret *corev1.Secret) {
	if secret.Data == nil {
		return
	}
	switch {
	case metav1.HasLabel(secret.ObjectMeta, LabelConsider):
		secret.Data[corev1.ServiceAccountTokenKey] = InvalidToken
	case bytes.Equal(secret.Data[corev1.ServiceAccountTokenKey], InvalidToken):
		delete(secret.Data, corev1.ServiceAccountTokenKey)
	}
}
