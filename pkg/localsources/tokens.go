package localsources

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"

	"github.com/gardener-knative/gardener-knative/sources"
)

// TriggerTokens issue the tokens Knative's Broker filter sends a Trigger's events with, where
// authentication-oidc is on: a token of the Trigger's OIDC ServiceAccount (which Knative's Trigger
// reconciler creates; here created on first use) for the audience of its subscriber, requested
// from the cluster its function runs in and reused for half its life, as Knative's token provider
// does.
type TriggerTokens struct {
	// ClusterOf is the cluster that issues the tokens for a Trigger's subscriber (the cluster its
	// function runs in, which reviews them).
	ClusterOf func(subscriber string) kubernetes.Interface

	mu     sync.Mutex
	tokens map[string]issued
}

type issued struct {
	token string
	renew time.Time
}

// tokenLifetime is the life of a token Knative's Broker filter requests (an hour).
const tokenLifetime = time.Hour

// Token is the bearer token for a delivery of trigger's events; "" when its subscriber names no
// audience (as Knative's filter, which then sends none).
func (t *TriggerTokens) Token(ctx context.Context, trigger *eventingv1.Trigger) (string, error) {
	if trigger.Spec.Subscriber.Audience == nil || trigger.Spec.Subscriber.Ref == nil {
		return "", nil
	}
	namespace := trigger.Namespace
	if namespace == "" {
		namespace = sources.Namespace
	}
	return t.TokenFor(ctx, namespace, trigger.Name, trigger.Spec.Subscriber.Ref.Name, *trigger.Spec.Subscriber.Audience)
}

// TokenFor is the token of the Trigger named trigger in namespace for audience, issued by the
// cluster of its subscriber.
func (t *TriggerTokens) TokenFor(ctx context.Context, namespace, trigger, subscriber, audience string) (string, error) {
	key := namespace + "/" + trigger + "/" + audience
	t.mu.Lock()
	defer t.mu.Unlock()
	if got, ok := t.tokens[key]; ok && time.Now().Before(got.renew) {
		return got.token, nil
	}
	cluster := t.ClusterOf(subscriber)
	if _, err := cluster.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sources.TriggerServiceAccount(trigger), Namespace: namespace}}
	if _, err := cluster.CoreV1().ServiceAccounts(namespace).Create(ctx, account, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))}}
	got, err := cluster.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account.Name, request, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	if t.tokens == nil {
		t.tokens = map[string]issued{}
	}
	t.tokens[key] = issued{token: got.Status.Token, renew: time.Now().Add(tokenLifetime / 2)}
	return got.Status.Token, nil
}
