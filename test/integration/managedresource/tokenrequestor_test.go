package managedresource_test

import (
	"context"
	"testing"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/tokenrequestor"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

func tokenRequestorConfig() *tokenrequestor.Config { return &tokenrequestor.Config{Enabled: true} }

// tokenSecret is a token requestor Secret in namespace for the ServiceAccount sa/ns of the target.
func tokenSecret(t testing.TB, namespace, name, saNamespace string, annotations map[string]string, data map[string][]byte) *corev1.Secret {
	t.Helper()
	a := map[string]string{
		resourcesv1alpha1.ServiceAccountName:      name,
		resourcesv1alpha1.ServiceAccountNamespace: saNamespace,
	}
	for k, v := range annotations {
		a[k] = v
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: a, Labels: map[string]string{
			resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest,
			resourcesv1alpha1.ResourceManagerClass:   resourcesv1alpha1.ResourceManagerClassShoot,
		}},
		Data: data,
	}
	require.NoError(t, seed.Client.Create(context.Background(), s))
	return s
}

// authenticated asks the target whether token is valid, and as whom.
func authenticated(t testing.TB, target *testenv.Env, token string) string {
	t.Helper()
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"gardener"}}}
	require.NoError(t, target.Client.Create(context.Background(), review))
	if !review.Status.Authenticated {
		return ""
	}
	return review.Status.User.Username
}

// The token requestor creates the Secret's ServiceAccount in the target (with its labels) and
// writes a valid token of it into the Secret, with the CA bundle when asked, and the renewal time;
// a sweep renews a token once it is due, and writes nothing while none is.
func TestTokenRequestor(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, tokenrequestor.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(tokenRequestorConfig()))
	ns := namespace(t, shootA)
	secret := tokenSecret(t, ns, "app", ns, map[string]string{
		resourcesv1alpha1.ServiceAccountLabels:                  `{"app":"demo"}`,
		resourcesv1alpha1.ServiceAccountInjectCABundle:          "true",
		resourcesv1alpha1.ServiceAccountTokenExpirationDuration: "1h",
	}, nil)
	h.Send("add", secret)

	sa := &corev1.ServiceAccount{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, sa))
	assert.Equal(t, map[string]string{"app": "demo"}, sa.Labels)
	assert.False(t, *sa.AutomountServiceAccountToken)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	assert.Equal(t, "system:serviceaccount:"+ns+":app", authenticated(t, shootA, string(secret.Data["token"])))
	assert.Equal(t, shootA.Config.CAData, secret.Data["bundle.crt"])
	renew, err := time.Parse(time.RFC3339, secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp])
	require.NoError(t, err)
	assert.InDelta(t, 48*time.Minute, renew.Sub(h.Clock.Now()), float64(5*time.Minute), "renewed after 80 %% of an hour, jittered")

	// Nothing due: a sweep costs its LIST and writes nothing.
	h.ResetRequests()
	h.TargetCounter.Reset()
	h.Sweep("renew")
	assert.Equal(t, 1, h.Requests(""), "one LIST of the token requestor's Secrets")
	assert.Zero(t, h.TargetCounter.Total(""))

	// Due: the sweep renews it.
	h.Clock.Step(time.Hour)
	old := string(secret.Data["token"])
	h.Sweep("renew")
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	assert.NotEqual(t, old, string(secret.Data["token"]), "a new token")
}

// A kubeconfig in the Secret gets the token as its current user's, and a target Secret gets the
// token instead of the source Secret.
func TestTokenRequestorKubeconfigAndTargetSecret(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, tokenrequestor.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(tokenRequestorConfig()))
	ns := namespace(t, shootA)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://shoot"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	raw, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	withKubeconfig := tokenSecret(t, ns, "kubeconfig", ns, nil, map[string][]byte{"kubeconfig": raw})
	h.Send("add", withKubeconfig)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(withKubeconfig), withKubeconfig))
	written, err := clientcmd.Load(withKubeconfig.Data["kubeconfig"])
	require.NoError(t, err)
	assert.NotEmpty(t, authenticated(t, shootA, written.AuthInfos["u"].Token))

	toTarget := tokenSecret(t, ns, "copied", ns, map[string]string{
		resourcesv1alpha1.TokenRequestorTargetSecretName:      "copy",
		resourcesv1alpha1.TokenRequestorTargetSecretNamespace: ns,
	}, nil)
	h.Send("add", toTarget)
	copied := &corev1.Secret{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "copy"}, copied))
	assert.NotEmpty(t, authenticated(t, shootA, string(copied.Data["token"])))
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(toTarget), toTarget))
	assert.NotContains(t, toTarget.Data, "token", "the token lives in the target Secret only")
}

// Per seed, a Secret in a shoot's namespace gets a token of that shoot; an event while the
// token is valid and not due asks the shoot (TokenReview) and writes nothing.
func TestTokenRequestorPerSeed(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, tokenrequestor.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(tokenRequestorConfig()))
	ns := targetNamespace(t)
	secret := tokenSecret(t, string(tenantB), "tr-"+ns, ns, nil, nil)
	h.Send("add", secret)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	assert.Equal(t, "system:serviceaccount:"+ns+":tr-"+ns, authenticated(t, shootB, string(secret.Data["token"])))
	assert.Empty(t, authenticated(t, shootA, string(secret.Data["token"])), "a token of tenant B's shoot, not A's")

	h.ResetRequests()
	h.TargetCounter.Reset()
	h.Send("update", secret)
	assert.Zero(t, h.Requests("patch"), "nothing due, nothing written")
	assert.Equal(t, 1, h.TargetCounter.Total("create"), "one TokenReview")
}

// With targetClientConnection.namespaces, a Secret whose ServiceAccount or target Secret is in
// another namespace of the target is a terminal failure (acknowledged, counted, not retried) and
// nothing of the target is read or written; one within them gets its token.
func TestTokenRequestorOnlyInTheTargetNamespaces(t *testing.T) {
	ctx := context.Background()
	served := targetNamespace(t)
	h := functiontest.New(t, seed, tokenrequestor.Function, functiontest.AsFunction(), functiontest.WithTenants(),
		functiontest.WithConfig(&tokenrequestor.Config{Enabled: true, Namespaces: []string{served}}))
	elsewhere := targetNamespace(t)
	terminal := func() float64 {
		return h.Metric("gardener_knative_events_total", map[string]string{"outcome": "terminal"})
	}
	for name, secret := range map[string]*corev1.Secret{
		"its ServiceAccount elsewhere": tokenSecret(t, string(tenantB), "tr-sa-"+elsewhere, elsewhere, nil, nil),
		"its target Secret elsewhere": tokenSecret(t, string(tenantB), "tr-target-"+elsewhere, served, map[string]string{
			resourcesv1alpha1.TokenRequestorTargetSecretName:      "copy",
			resourcesv1alpha1.TokenRequestorTargetSecretNamespace: elsewhere,
		}, nil),
	} {
		before := terminal()
		h.TargetCounter.Reset()
		h.Send("add", secret)
		assert.Equal(t, before+1, terminal(), name)
		assert.Zero(t, h.TargetCounter.Total("get")+h.TargetCounter.Total("create")+h.TargetCounter.Total("patch"), "%s: nothing of the target touched", name)
		require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
		assert.NotContains(t, secret.Data, "token", name)
	}
	inServed := tokenSecret(t, string(tenantB), "tr-"+served, served, nil, nil)
	h.Send("add", inServed)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(inServed), inServed))
	assert.Equal(t, "system:serviceaccount:"+served+":tr-"+served, authenticated(t, shootB, string(inServed.Data["token"])))
}
