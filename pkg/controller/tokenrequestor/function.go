// Package tokenrequestor is GRM's TokenRequestor controller as a function: for every Secret of
// the source labelled resources.gardener.cloud/purpose=token-requestor (and class shoot), it
// keeps a ServiceAccount in the target, requests a token for it with the TokenRequest API and
// writes it into the Secret (or its kubeconfig, or a Secret in the target), renewing it after 80 %
// of its lifetime. Renewal is a sweep every minute, so no token expires because an event was lost.
package tokenrequestor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the token requestor's part of the ResourceManagerConfiguration
// (controllers.tokenRequestor), overridden by the environment.
type Config struct {
	// Enabled is controllers.tokenRequestor.enabled.
	Enabled bool `envconfig:"TOKEN_REQUESTOR_ENABLED"`
	// Namespaces is targetClientConnection.namespaces: the namespaces of the target where it keeps
	// ServiceAccounts and target Secrets, all when empty. Gardener's controller reads the target
	// through a cache confined to them, so a Secret asking for another namespace fails there on
	// every retry; here it is a terminal failure that says why, and nothing of the target is read
	// or written (a shoot's resource manager has kube-system, kubernetes-dashboard and
	// kube-node-lease).
	Namespaces []string `envconfig:"TARGET_NAMESPACES"`
}

// FromResourceManager takes the settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.Enabled = rm.Controllers.TokenRequestor.Enabled
	if rm.TargetClientConnection != nil {
		c.Namespaces = rm.TargetClientConnection.Namespaces
	}
}

// unserved is the first namespace of the target the Secret asks for (its ServiceAccount's, its
// target Secret's) that is not among Namespaces; "" when it asks for none such.
func (c *Config) unserved(secret *corev1.Secret) string {
	asked := []string{ServiceAccount(secret).Namespace}
	if target := TargetSecret(secret); target != nil {
		asked = append(asked, target.Namespace)
	}
	for _, namespace := range asked {
		if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, namespace) {
			return namespace
		}
	}
	return ""
}

// class is the class of the Secrets GRM's token requestor serves (gardenlet's serves others).
const class = resourcesv1alpha1.ResourceManagerClassShoot

// purpose selects the token requestor's Secrets on the server.
const purpose = resourcesv1alpha1.ResourceManagerPurpose + "=" + resourcesv1alpha1.LabelPurposeTokenRequest

// Function is GRM's TokenRequestor controller.
var Function = &function.Function{
	Name:       "tokenrequestor",
	Parts:      []function.Part{function.Seed},
	Config:     &Config{},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// Per seed: the tenants (its sweep runs per tenant) and each Secret's tenant.
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
	},
	// The token requestor's Secrets, each tenant's access Secrets among them: in enrolled tenants'
	// namespaces only.
	TenantRBAC:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "patch"}}},
	Reconcilers: []function.Reconciler{{Name: "main", For: kinds.Secret, New: newReconciler}},
	Watches:     []function.Watch{{Kind: kinds.Secret, Reconciler: "main", LabelSelector: purpose}},
	Sweeps: []function.Sweep{{
		Name: "renew", Schedule: "* * * * *", Reconciler: "main",
		Off:     func(config any) bool { return !config.(*Config).Enabled },
		Primary: function.List{Kind: kinds.Secret, LabelSelector: purpose, PerTenant: true},
	}},
}

// Reconciler keeps one Secret's token.
type Reconciler struct {
	Config         *Config
	Source, Target function.ClusterClient
	Clock          clock.PassiveClock
	Jitter         func(time.Duration, float64) time.Duration
	Log            *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Config: deps.Config.(*Config), Source: deps.Source, Target: deps.Target, Clock: deps.Clock, Jitter: wait.Jitter, Log: deps.Log}, nil
}

// Reconcile requests a new token for the Secret when its token is due (missing, invalid, with an
// outdated CA bundle, or past its renewal time) and writes it where the Secret asks.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Enabled {
		return nil
	}
	secret := &corev1.Secret{}
	if err := req.Reader.Get(ctx, req.Key, secret); err != nil {
		return err
	}
	if !Relevant(secret.Labels, class) {
		return nil
	}
	if namespace := r.Config.unserved(secret); namespace != "" {
		return function.Terminal(fmt.Errorf("the Secret asks for the target's namespace %s, which is not among targetClientConnection.namespaces %v", namespace, r.Config.Namespaces))
	}
	due, err := r.due(ctx, req, secret)
	if err != nil || !due {
		return err
	}
	sa, err := r.serviceAccount(ctx, req, secret)
	if err != nil {
		return err
	}
	expiration, err := Expiration(secret)
	if err != nil {
		return function.Terminal(fmt.Errorf("annotation %s: %w", resourcesv1alpha1.ServiceAccountTokenExpirationDuration, err))
	}
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{v1beta1constants.GardenerAudience}, ExpirationSeconds: ptr.To(int64(expiration / time.Second)),
	}}
	if err := r.Target.Tokens.Request(ctx, sa, tokenRequest); err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s: %w", client.ObjectKeyFromObject(sa), err)
	}
	renewAfter := RenewAfter(r.Clock.Now(), tokenRequest.Status.ExpirationTimestamp.Time, r.Jitter)
	if err := r.write(ctx, req, secret, tokenRequest.Status.Token, renewAfter); err != nil {
		return fmt.Errorf("could not update Secret with token: %w", err)
	}
	r.Log.Info("requested a token and scheduled its renewal", "secret", req.Key, "after", renewAfter)
	return nil
}

// due is Gardener's check whether a new token is needed. A sweep decides by the renewal
// timestamp alone (and a token in the Secret), so that a sweep where nothing is due costs one
// LIST; an event also reads the target Secret and asks the target whether the token is still
// valid (TokenReview), as Gardener does on every reconcile.
func (r *Reconciler) due(ctx context.Context, req function.Request, secret *corev1.Secret) (bool, error) {
	renew := secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp]
	if renew == "" {
		return true, nil
	}
	renewAt, err := time.Parse(time.RFC3339, renew)
	if err != nil {
		return false, function.Terminal(fmt.Errorf("could not parse renew timestamp: %w", err))
	}
	if !r.Clock.Now().UTC().Before(renewAt.UTC()) {
		return true, nil
	}
	holder := secret
	if target := TargetSecret(secret); target != nil {
		if req.Trigger == function.BySweep {
			return false, nil
		}
		if err := req.Target.Get(ctx, client.ObjectKeyFromObject(target), target); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("could not read target secret: %w", err)
		}
		holder = target
	}
	token, err := Token(holder.Data)
	if err != nil {
		return false, fmt.Errorf("could not check whether token exists in secret data: %w", err)
	}
	if token == "" {
		return true, nil
	}
	if req.Trigger == function.BySweep {
		return false, nil
	}
	if InjectsCA(secret) {
		ca, err := r.targetCA(ctx)
		if err != nil {
			return false, err
		}
		upToDate, err := CAUpToDate(holder.Data, ca)
		if err != nil {
			return false, fmt.Errorf("could not check whether the caBundle is up to date: %w", err)
		}
		if !upToDate {
			return true, nil
		}
	}
	// For the audience the token was requested for: Gardener reviews without one, which works
	// where the kube-apiserver lists "gardener" among its API audiences (shoots do).
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{v1beta1constants.GardenerAudience}}}
	if err := r.Target.Tokens.Review(ctx, review); err != nil {
		return false, fmt.Errorf("token review failed: %w", err)
	}
	return !review.Status.Authenticated, nil
}

func (r *Reconciler) targetCA(ctx context.Context) ([]byte, error) {
	cfg, err := r.Target.RESTConfig(ctx)
	if err != nil {
		return nil, err
	}
	return cfg.CAData, nil
}

// serviceAccount creates or updates the Secret's ServiceAccount in the target: its labels, and no
// automounted token.
func (r *Reconciler) serviceAccount(ctx context.Context, req function.Request, secret *corev1.Secret) (*corev1.ServiceAccount, error) {
	labels, err := ServiceAccountLabels(secret)
	if err != nil {
		return nil, function.Terminal(err)
	}
	sa := ServiceAccount(secret)
	err = req.Target.Get(ctx, client.ObjectKeyFromObject(sa), sa)
	switch {
	case apierrors.IsNotFound(err):
		sa.Labels, sa.AutomountServiceAccountToken = labels, ptr.To(false)
		return sa, r.Target.Writer.Create(ctx, sa)
	case err != nil:
		return nil, err
	}
	_, err = r.Target.Writer.Patch(ctx, sa, func() { sa.Labels, sa.AutomountServiceAccountToken = labels, ptr.To(false) })
	return sa, err
}

// write puts the token (and CA bundle) into the target Secret the source Secret names, taking it
// out of the source Secret, or else into the source Secret, and annotates the source Secret with
// the renewal time.
func (r *Reconciler) write(ctx context.Context, req function.Request, secret *corev1.Secret, token string, renewAfter time.Duration) error {
	var ca []byte
	if InjectsCA(secret) {
		var err error
		if ca, err = r.targetCA(ctx); err != nil {
			return err
		}
	}
	target := TargetSecret(secret)
	if target != nil {
		err := req.Target.Get(ctx, client.ObjectKeyFromObject(target), target)
		switch {
		case apierrors.IsNotFound(err):
			target.Data = map[string][]byte{}
			if err := Populate(target.Data, token, ca); err != nil {
				return err
			}
			if err := r.Target.Writer.Create(ctx, target); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			var populateErr error
			if _, err := r.Target.Writer.Patch(ctx, target, func() {
				if target.Data == nil {
					target.Data = map[string][]byte{}
				}
				populateErr = Populate(target.Data, token, ca)
			}); err != nil {
				return err
			}
			if populateErr != nil {
				return populateErr
			}
		}
	}
	var populateErr error
	_, err := r.Source.Writer.Patch(ctx, secret, func() {
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp] = r.Clock.Now().UTC().Add(renewAfter).Format(time.RFC3339)
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		if target != nil {
			Depopulate(secret.Data)
			return
		}
		populateErr = Populate(secret.Data, token, ca)
	})
	if populateErr != nil {
		return populateErr
	}
	return err
}
