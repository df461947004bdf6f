package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

// The shoot side. A second kube-apiserver (and etcd) on the host plays a shoot of the cluster,
// which plays its seed: it listens on the host's address, so that pods reach it, and it reaches
// the seed's webhooks by their cluster-local URLs through the cluster's egress proxy, as a
// shoot's kube-apiserver in a seed reaches them from its pod. What gardenlet does for a shoot
// is done by testenv.Enroll: in the seed the shoot's control-plane namespace (the tenant), its
// Cluster and its access Secrets; in the shoot GRM's ServiceAccount; and the operator's
// RoleBinding of docs/deployment.md. Then the per-seed
// deployment serves the shoot with nothing deployed for it: the target-clusters source pod
// discovers it and watches it, the GRM functions apply into it, grm-webhooks and
// grm-node-agent-authorizer answer its kube-apiserver at the tenant's path.

// shoot is the shoot's control plane and its tenant in the seed.
type shoot struct {
	env    *testenv.Env
	tenant tenant.Name
}

// startShoot starts the shoot's control plane and enrolls it in the seed as tenant tn; the
// cleanup removes the tenant from the seed (its ManagedResources must be gone first) and stops
// the shoot.
func startShoot(t *testing.T, tn tenant.Name) *shoot {
	t.Helper()
	ctx := context.Background()
	dir := os.Getenv("CLUSTER_DIR")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// The cluster's kube-apiserver and etcd are envtest's (hack/cluster-assets.sh).
		t.Setenv("KUBEBUILDER_ASSETS", os.Getenv("CLUSTER_ASSETS"))
	}
	s := &shoot{tenant: tn}
	authz := writeShootAuthorizer(t, s.tenant, dir)
	env, err := testenv.StartWith(testenv.Options{
		Address: os.Getenv("CLUSTER_HOST_IP"),
		APIServerArgs: map[string]string{
			"egress-selector-config-file":                  filepath.Join(dir, "egress.yaml"),
			"authorization-mode":                           "RBAC,Webhook",
			"authorization-webhook-config-file":            authz,
			"authorization-webhook-version":                "v1",
			"authorization-webhook-cache-authorized-ttl":   "0s",
			"authorization-webhook-cache-unauthorized-ttl": "0s",
		},
	})
	require.NoError(t, err, "the shoot's control plane")
	s.env = env
	t.Cleanup(func() { _ = env.Stop() })
	require.NoError(t, testenv.Enroll(ctx, c, s.tenant, env))
	// The operator's part of enrolling a shoot (docs/deployment.md): the webhook servers may read
	// the Secrets of this namespace, and of no namespace not enrolled.
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: string(s.tenant), Name: "gardener-knative:grm-webhooks-tenant-access"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gardener-knative:grm-webhooks-tenant-access"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "grm-webhooks"}},
	}))
	t.Cleanup(func() {
		_ = c.Delete(ctx, &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: string(s.tenant)}})
		_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: string(s.tenant)}})
	})
	t.Logf("shoot %s at %s", s.tenant, env.Config.Host)
	return s
}

// atTenantPath moves a registration's URL, which config/shoot/ gives for the tenant
// shoot--project--name, to the tenant's own path.
func atTenantPath(t *testing.T, raw string, tn tenant.Name) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	_, rest, ok := webhook.ParseTenantPath(u.Path, tenant.DefaultPrefix)
	require.True(t, ok, "%s addresses no tenant", raw)
	u.Path = "/" + string(tn) + rest
	return u.String()
}

// writeShootAuthorizer fills in config/shoot/authorization-webhook.kubeconfig.example for the
// tenant, as an operator does: the tenant's path, and the CA of the cluster's ingress.
func writeShootAuthorizer(t *testing.T, tn tenant.Name, dir string) string {
	t.Helper()
	example, err := os.ReadFile("../../config/shoot/authorization-webhook.kubeconfig.example")
	require.NoError(t, err)
	ca, err := os.ReadFile(filepath.Join(dir, "pki", "ingress-ca.crt"))
	require.NoError(t, err)
	example = []byte(strings.Replace(string(example), "<base64 PEM of the CA>", base64.StdEncoding.EncodeToString(ca), 1))
	kc, err := clientcmd.Load(example)
	require.NoError(t, err)
	for _, cluster := range kc.Clusters {
		cluster.Server = atTenantPath(t, cluster.Server, tn)
	}
	path := filepath.Join(t.TempDir(), "authorization-webhook.kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// installShootRegistration installs a config/shoot/ registration into the shoot as an operator
// does: each webhook's url at the tenant's path, and the ingress's CA.
func installShootRegistration(t *testing.T, s *shoot, file string) {
	t.Helper()
	data, err := os.ReadFile("../../config/shoot/" + file)
	require.NoError(t, err)
	ca, err := os.ReadFile(filepath.Join(os.Getenv("CLUSTER_DIR"), "pki", "ingress-ca.crt"))
	require.NoError(t, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	installed := 0
	for {
		reg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := decoder.Decode(reg); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		for i := range reg.Webhooks {
			cc := &reg.Webhooks[i].ClientConfig
			require.NotNil(t, cc.URL, "%s: registered by URL", reg.Name)
			cc.URL, cc.CABundle = ptr.To(atTenantPath(t, *cc.URL, s.tenant)), ca
		}
		require.NoError(t, s.env.Client.Create(context.Background(), reg))
		installed++
	}
	require.NotZero(t, installed, "%s registers nothing", file)
}

// The shoot side of one seed: a ManagedResource in the shoot's namespace of the seed is applied
// into the shoot; a manual edit there comes back through the target source's event; the token
// requestor writes a token of the shoot; the shoot's kube-apiserver calls the seed's
// grm-webhooks and grm-node-agent-authorizer at the tenant's path.
func TestShoot(t *testing.T) {
	ctx := context.Background()
	s := startShoot(t, tenant.Name(fmt.Sprintf("shoot--e2e--s%d", time.Now().Unix()%100000)))
	ns := string(s.tenant)

	t.Run("ManagedResource applied into the shoot", func(t *testing.T) {
		// No Namespace: the shoot has no namespace controller to finish a deletion.
		const manifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: e2e-config
  namespace: default
data:
  greeting: as the ManagedResource says
`
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e"}, Data: map[string][]byte{"objects.yaml": []byte(manifest)}}))
		mr := &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e"},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: "e2e"}}},
		}
		require.NoError(t, c.Create(ctx, mr))
		t.Cleanup(func() {
			deleteManagedResource(t, mr)
			err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "e2e-config"}, &corev1.ConfigMap{})
			require.True(t, apierrors.IsNotFound(err), "its ConfigMap is deleted from the shoot: %v", err)
		})
		took := eventually(t, 2*time.Minute, "the ManagedResource's objects in the shoot", func() error {
			cm := &corev1.ConfigMap{}
			if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "e2e-config"}, cm); err != nil {
				return err
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(mr), mr); err != nil {
				return err
			}
			for _, cond := range mr.Status.Conditions {
				if cond.Type == resourcesv1alpha1.ResourcesApplied && cond.Status == "True" {
					return nil
				}
			}
			return fmt.Errorf("ResourcesApplied is not True: %v", mr.Status.Conditions)
		})
		t.Logf("applied into the shoot and ResourcesApplied within %s", took.Round(time.Millisecond))

		// A manual edit in the shoot reaches the managedresource function as an event of the
		// target-clusters source, which watches the shoot: it is reverted before the next
		// sync sweep (every minute, on the minute) could have done it. Events are hints and may
		// be lost (the sweep then converges, as designed): one edit of three must come back by
		// its event, and each miss is reported with the logs that tell where the event went.
		const edits = 3
		for attempt := 1; ; attempt++ {
			took, byEvent := editRevertedBy(ctx, t, s)
			if byEvent {
				t.Logf("manual edit in the shoot reverted by its event within %s (attempt %d)", took.Round(time.Millisecond), attempt)
				break
			}
			t.Logf("attempt %d: the manual edit was reverted only by the sync sweep, after %s: its event was lost; the logs since the edit:", attempt, took.Round(time.Millisecond))
			logPodsSince(t, time.Now().Add(-took-time.Second), "target-clusters", "managedresource", "dead-letter")
			require.Less(t, attempt, edits, "none of %d manual edits was reverted by its event", edits)
		}
	})

	t.Run("token requestor writes a token of the shoot", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "e2e-token",
			Labels: map[string]string{resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest, resourcesv1alpha1.ResourceManagerClass: resourcesv1alpha1.ResourceManagerClassShoot},
			Annotations: map[string]string{
				resourcesv1alpha1.ServiceAccountName: "e2e", resourcesv1alpha1.ServiceAccountNamespace: metav1.NamespaceSystem,
			},
		}}
		require.NoError(t, c.Create(ctx, secret))
		t.Cleanup(func() { _ = c.Delete(ctx, secret) })
		took := eventually(t, 2*time.Minute, "a token in the Secret", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
				return err
			}
			if len(secret.Data["token"]) == 0 {
				return errors.New("no token yet")
			}
			return nil
		})
		// The token is the shoot's: its kube-apiserver says whom it names (for the audience
		// Gardener requests its tokens for).
		sa := &corev1.ServiceAccount{}
		require.NoError(t, s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "e2e"}, sa), "the ServiceAccount in the shoot")
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: string(secret.Data["token"]), Audiences: []string{v1beta1constants.GardenerAudience}}}
		require.NoError(t, s.env.Client.Create(ctx, review))
		require.True(t, review.Status.Authenticated, "the shoot authenticates the token: %+v", review.Status)
		require.Equal(t, "system:serviceaccount:kube-system:e2e", review.Status.User.Username)
		t.Logf("token of the shoot's kube-system/e2e written within %s", took.Round(time.Millisecond))
	})

	t.Run("the shoot's kube-apiserver calls grm-webhooks at the tenant's path", func(t *testing.T) {
		installShootRegistration(t, s, "webhook-projected-token-mount.yaml")
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-automount", Namespace: metav1.NamespaceSystem}, AutomountServiceAccountToken: ptr.To(false)}
		require.NoError(t, s.env.Client.Create(ctx, sa))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: metav1.NamespaceSystem},
			Spec:       corev1.PodSpec{ServiceAccountName: sa.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.local/c:1"}}},
		}
		// The webhook reads the ServiceAccount from the shoot with the tenant's client.
		assertTokenMounted(t, s.env.Client, pod)
	})

	t.Run("the shoot's kube-apiserver asks grm-node-agent-authorizer at the tenant's path", func(t *testing.T) {
		assertNodeAgentAuthorizer(t, s.env.Client)
	})
}

// deleteManagedResource deletes a ManagedResource and waits until it is gone (its objects deleted
// from the shoot), so that the tenant can go.
func deleteManagedResource(t *testing.T, mr *resourcesv1alpha1.ManagedResource) {
	ctx := context.Background()
	if err := c.Delete(ctx, mr); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the ManagedResource: %v", err)
		return
	}
	eventually(t, 2*time.Minute, "the ManagedResource gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(mr), &resourcesv1alpha1.ManagedResource{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// editRevertedBy edits the ManagedResource's ConfigMap in the shoot well after the minute's sync
// sweep and waits until it is reverted; byEvent says whether that happened before the next sweep
// (every minute, on the minute), so that only the target source's event can have done it.
func editRevertedBy(ctx context.Context, t *testing.T, s *shoot) (took time.Duration, byEvent bool) {
	t.Helper()
	for now := time.Now(); now.Second() < 10 || now.Second() > 25; now = time.Now() {
		time.Sleep(200 * time.Millisecond)
	}
	nextSweep := time.Now().Truncate(time.Minute).Add(time.Minute)
	cm := &corev1.ConfigMap{}
	require.NoError(t, s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "e2e-config"}, cm))
	cm.Data["greeting"] = "edited by hand"
	require.NoError(t, s.env.Client.Update(ctx, cm))
	took = eventually(t, 2*time.Minute, "the manual edit reverted", func() error {
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
		if cm.Data["greeting"] != "as the ManagedResource says" {
			return fmt.Errorf("greeting %q", cm.Data["greeting"])
		}
		return nil
	})
	return took, time.Now().Before(nextSweep)
}

// logPodsSince logs what the named pods of the deployment wrote since a time, from the
// kubelet's pod logs in the cluster's directory (CRI format: a timestamp first on every line).
func logPodsSince(t *testing.T, since time.Time, names ...string) {
	t.Helper()
	for _, name := range names {
		files, _ := filepath.Glob(filepath.Join(os.Getenv("CLUSTER_DIR"), "pod-logs", namespace+"_"+name+"-*", "*", "*.log"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Logf("%s: %v", file, err)
				continue
			}
			for _, line := range strings.Split(string(data), "\n") {
				stamp, _, _ := strings.Cut(line, " ")
				if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && !at.Before(since) {
					t.Logf("%s: %s", filepath.Base(filepath.Dir(filepath.Dir(file))), line)
				}
			}
		}
	}
}
