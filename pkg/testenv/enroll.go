package testenv

import (
	"context"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
)

// OurNamespace is where the seed part's identities live (function.SeedNamespace, which this
// package cannot import: the runtime's own tests use it).
const OurNamespace = "gardener-knative"

// Enroll does in the seed and the shoot what gardenlet does for a shoot's
// gardener-resource-manager, so that the tenant t (the shoot's control-plane namespace) can be
// served per seed: in the shoot the ServiceAccount kube-system/gardener-resource-manager bound to
// cluster-admin; in the seed the namespace t, the Cluster t annotated with the name of the
// generic token kubeconfig, that kubeconfig (the shoot's server and CA, a token file) and the
// access Secret holding the ServiceAccount's token (valid for a day). The Cluster holds
// tenanttest.Shoot(t) and its Seed, and is labelled enrolled with this project
// (tenant.EnrolledLabel, as pkg/enrolment labels it), and our identities' tenant roles are bound
// in t (pkg/tenant/access, as the enrolment binds them); EnrollShoot enrolls another Shoot.
func Enroll(ctx context.Context, seed client.Client, t tenant.Name, shoot *Env) error {
	return EnrollShoot(ctx, seed, t, shoot, nil)
}

// EnrollShoot is Enroll with the Shoot the Cluster holds (tenanttest.Shoot(t) when nil): the
// tenant's settings come from it.
func EnrollShoot(ctx context.Context, seed client.Client, t tenant.Name, shoot *Env, shootObject *gardencorev1beta1.Shoot) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: v1beta1constants.DeploymentNameGardenerResourceManager}}
	if err := shoot.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := shoot.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:target:resource-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	if err := shoot.Client.SubResource("token").Create(ctx, sa, tokenRequest); err != nil {
		return fmt.Errorf("requesting a token: %w", err)
	}

	ns := string(t)
	if err := seed.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// As the enrolment: our identities' tenant roles, bound in the tenant's namespace.
	if _, err := access.Bind(ctx, seed, t, OurNamespace); err != nil {
		return err
	}
	kubeconfigName := v1beta1constants.SecretNameGenericTokenKubeconfig + "-0123abcd"
	cluster, err := tenanttest.Cluster(t, kubeconfigName, shootObject)
	if err != nil {
		return err
	}
	if err := seed.Create(ctx, cluster); err != nil {
		return err
	}
	kubeconfig, err := GenericTokenKubeconfig(ns, shoot.Config)
	if err != nil {
		return err
	}
	if err := seed.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kubeconfigName}, Data: map[string][]byte{"kubeconfig": kubeconfig}}); err != nil {
		return err
	}
	if err := EnrollWebhookAccess(ctx, seed, t, shoot); err != nil {
		return fmt.Errorf("the webhook servers' identity in the shoot: %w", err)
	}
	// As gardenlet keeps it: a token requestor Secret of the shoot's resource manager, renewed
	// before it expires by the shoot's token requestor.
	return seed.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenant.DefaultAccessSecret,
			Labels: map[string]string{
				resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest,
				resourcesv1alpha1.ResourceManagerClass:   resourcesv1alpha1.ResourceManagerClassShoot,
			},
			Annotations: map[string]string{
				resourcesv1alpha1.ServiceAccountName:                v1beta1constants.DeploymentNameGardenerResourceManager,
				resourcesv1alpha1.ServiceAccountNamespace:           metav1.NamespaceSystem,
				resourcesv1alpha1.ServiceAccountTokenRenewTimestamp: tokenRequest.Status.ExpirationTimestamp.Add(-4 * time.Hour).UTC().Format(time.RFC3339),
			},
		},
		Data: map[string][]byte{"token": []byte(tokenRequest.Status.Token)},
	})
}

// GenericTokenKubeconfig is Gardener's generic token kubeconfig for a shoot: its kube-apiserver
// with its CA, and a token file that only the shoot's pods mount.
func GenericTokenKubeconfig(contextName string, cfg *rest.Config) ([]byte, error) {
	return Kubeconfig(contextName, cfg, &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/token"})
}

// Kubeconfig is a kubeconfig whose one cluster (cfg's server and CA), user and context are all
// named name.
func Kubeconfig(name string, cfg *rest.Config, user *clientcmdapi.AuthInfo) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = user
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// EnrollWebhookAccess does what the enrolment and the token requestor do for the webhook servers'
// read-only identity in the shoot (pkg/tenant/webhookaccess): its RBAC there, its ServiceAccount
// and the token requestor Secret in the seed with a token valid for a day (Enroll does it too).
func EnrollWebhookAccess(ctx context.Context, seed client.Client, t tenant.Name, shoot *Env) error {
	objs, err := webhookaccess.ShootObjects()
	if err != nil {
		return err
	}
	sa := webhookaccess.ServiceAccount()
	for _, obj := range append(objs, sa) {
		if err := shoot.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	if err := shoot.Client.SubResource("token").Create(ctx, sa, tokenRequest); err != nil {
		return fmt.Errorf("requesting a token: %w", err)
	}
	secret := webhookaccess.Secret(t)
	secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp] = tokenRequest.Status.ExpirationTimestamp.Add(-4 * time.Hour).UTC().Format(time.RFC3339)
	secret.Data = map[string][]byte{"token": []byte(tokenRequest.Status.Token)}
	return seed.Create(ctx, secret)
}
