package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/enrolment"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// The shoot side. A second kube-apiserver (and etcd) on the host plays a shoot of the cluster,
// which plays its seed: it listens on the host's address, so that pods reach it, and it reaches
// the seed's webhooks by their cluster-local URLs through the cluster's egress proxy, as a
// shoot's kube-apiserver in a seed reaches them from its pod. What gardenlet does for a shoot
// is done by testenv.EnrollShoot: in the seed the shoot's control-plane namespace (the tenant),
// its Cluster (holding the Shoot) and its access Secrets; in the shoot GRM's ServiceAccount.
// The operator's part is the enrolment command's (pkg/enrolment, docs/deployment.md): the
// servers' access to the namespace, and the registrations that apply to the shoot. Then the
// per-seed deployment serves the shoot with nothing deployed for it: the target-clusters source
// pod discovers it and watches it, the GRM functions apply into it, grm-webhooks and
// grm-node-agent-authorizer answer its kube-apiserver at the tenant's path.

// shoot is the shoot's control plane and its tenant in the seed.
type shoot struct {
	env    *testenv.Env
	tenant tenant.Name
}

// startShoot starts the control plane of a default shoot (tenanttest.Shoot) as tenant tn.
func startShoot(t *testing.T, tn tenant.Name) *shoot {
	return startShootOf(t, tn, tenanttest.Shoot(tn))
}

// startShootOf starts the shoot's control plane and enrolls it in the seed as tenant tn with
// the Shoot its Cluster holds; the cleanup removes the tenant from the seed (its
// ManagedResources must be gone first) and stops the shoot.
func startShootOf(t *testing.T, tn tenant.Name, object *gardencorev1beta1.Shoot) *shoot {
	t.Helper()
	ctx := context.Background()
	dir := os.Getenv("CLUSTER_DIR")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// The cluster's kube-apiserver and etcd are envtest's (hack/cluster-assets.sh).
		t.Setenv("KUBEBUILDER_ASSETS", os.Getenv("CLUSTER_ASSETS"))
	}
	s := &shoot{tenant: tn}
	settings := tenant.SettingsOf(object, tenanttest.SeedObject())
	args := map[string]string{"egress-selector-config-file": filepath.Join(dir, "egress.yaml")}
	// The authorizer's file, as the enrolment writes it (none for a workerless shoot), its url
	// with the tenant's proof under the seed's signing key (made here if no enrolment made it yet).
	opts := shootEnrolment(t)
	var err error
	opts.Key, err = tenantproof.SigningKey(ctx, c, namespace, time.Now())
	require.NoError(t, err)
	authz, err := enrolment.AuthorizerKubeconfig(tn, &settings, opts)
	require.NoError(t, err)
	if authz != nil {
		path := filepath.Join(t.TempDir(), "authorization-webhook.kubeconfig")
		require.NoError(t, os.WriteFile(path, authz, 0o600))
		args["authorization-mode"] = "RBAC,Webhook"
		args["authorization-webhook-config-file"] = path
		args["authorization-webhook-version"] = "v1"
		args["authorization-webhook-cache-authorized-ttl"] = "0s"
		args["authorization-webhook-cache-unauthorized-ttl"] = "0s"
	}
	env, err := testenv.StartWith(testenv.Options{Address: os.Getenv("CLUSTER_HOST_IP"), APIServerArgs: args})
	require.NoError(t, err, "the shoot's control plane")
	s.env = env
	t.Cleanup(func() { _ = env.Stop() })
	require.NoError(t, testenv.EnrollShoot(ctx, c, s.tenant, env, object))
	t.Cleanup(func() {
		_ = c.Delete(ctx, &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: string(s.tenant)}})
		_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: string(s.tenant)}})
	})
	result, err := enrolment.Enrol(ctx, c, s.tenant, namespace, opts)
	require.NoError(t, err, "enrolling the shoot with the webhook servers")
	t.Logf("shoot %s at %s, registered %v", s.tenant, env.Config.Host, result.Registered)
	return s
}

// shootEnrolment is the enrolment's options on this cluster: the registrations' cluster-local
// hosts, with the CA of the cluster's ingress (Knative's cluster-local TLS), and the variant
// of the deployed configuration.
func shootEnrolment(t *testing.T) enrolment.Options {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(os.Getenv("CLUSTER_DIR"), "pki", "ingress-ca.crt"))
	require.NoError(t, err)
	return enrolment.Options{CABundle: ca, ScaleToZero: os.Getenv("CLUSTER_SCALE_TO_ZERO") != ""}
}

// noAutomountPod makes a ServiceAccount in the shoot's kube-system that mounts no token, and
// returns a Pod of that account, not created: projected-token-mount must mutate it.
func noAutomountPod(t *testing.T, shoot client.Client) *corev1.Pod {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-automount", Namespace: metav1.NamespaceSystem}, AutomountServiceAccountToken: ptr.To(false)}
	require.NoError(t, shoot.Create(context.Background(), sa))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: metav1.NamespaceSystem},
		Spec:       corev1.PodSpec{ServiceAccountName: sa.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.local/c:1"}}},
	}
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
		// target-clusters source, which watches the shoot: it is reverted long before the
		// hourly sync sweep would. Events are hints and may be lost (the sweep then converges,
		// as designed): one edit of three must come back by its event, and each miss is
		// reported with the logs that tell where the event went.
		const edits = 3
		for attempt := 1; ; attempt++ {
			took, byEvent := editRevertedBy(ctx, t, s, attempt)
			if byEvent {
				t.Logf("manual edit in the shoot reverted by its event within %s (attempt %d)", took.Round(time.Millisecond), attempt)
				break
			}
			t.Logf("attempt %d: the manual edit was not reverted within %s: its event was lost; the logs since the edit:", attempt, took.Round(time.Millisecond))
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
		// The webhook reads the ServiceAccount from the shoot with the tenant's client.
		assertTokenMounted(t, s.env.Client, noAutomountPod(t, s.env.Client))
	})

	t.Run("the shoot's kube-apiserver asks grm-node-agent-authorizer at the tenant's path", func(t *testing.T) {
		assertNodeAgentAuthorizer(t, s.env.Client)
	})

	t.Run("the shoot's access token is renewed by the token requestor", func(t *testing.T) {
		assertAccessTokenRenewed(t, s)
	})

	t.Run("each shoot's Pods get its own answers", func(t *testing.T) {
		// A second shoot of another domain with the bin-packing profile.
		tn := tenant.Name(string(s.tenant) + "-bp")
		binPacking := tenanttest.Shoot(tn)
		profile := gardencorev1beta1.SchedulingProfileBinPacking
		binPacking.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{Profile: &profile}
		bp := startShootOf(t, tn, binPacking)
		assertRegistered(t, s, false)
		assertRegistered(t, bp, true)
		assertOwnAnswers(t, s, tenanttest.APIServerHost(s.tenant), corev1.DefaultSchedulerName)
		assertOwnAnswers(t, bp, tenanttest.APIServerHost(tn), tenant.BinPackingSchedulerName)
		assertOwnManagedResources(t, s, bp)
		assertCopiedRegistrationRefused(t, s, bp.tenant)
	})
}

// assertCopiedRegistrationRefused is a shoot admin of s at work: a copy of s's own registration of
// projected-token-mount (s's proof in its url) pointed at other's path, then at the seed's, then at
// the seed's bare path. s's kube-apiserver calls each and the server refuses the call before it
// reads anything of other or of the seed (the proof is s's): the copy is fail-closed, so s's Pod
// is rejected with the server's reason.
func assertCopiedRegistrationRefused(t *testing.T, s *shoot, other tenant.Name) {
	t.Helper()
	ctx := context.Background()
	own := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, s.env.Client.Get(ctx, client.ObjectKey{Name: "gardener-knative-projected-token-mount"}, own))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "copied-registration"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.local/c:1"}}},
	}
	for _, forged := range []struct {
		name, refusal string
		path          func(proof, rest string) string
	}{
		{string(other), "does not prove tenant " + string(other), func(proof, rest string) string {
			return "/" + string(other) + tenantproof.Separator + proof + rest
		}},
		{"the seed", "does not prove the seed", func(proof, rest string) string {
			return "/" + tenantproof.SeedSegment + tenantproof.Separator + proof + rest
		}},
		{"the seed's bare path", "serves the seed at /" + tenantproof.SeedSegment, func(_, rest string) string { return rest }},
	} {
		copied := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "copied-for-another-tenant"},
			Webhooks:   own.DeepCopy().Webhooks,
		}
		for i := range copied.Webhooks {
			u, err := url.Parse(ptr.Deref(copied.Webhooks[i].ClientConfig.URL, ""))
			require.NoError(t, err)
			tn, proof, rest, ok := tenantproof.ParsePath(u.Path, tenant.DefaultPrefix)
			require.True(t, ok && tn == s.tenant && proof != "", "%s names %s with a proof", u, s.tenant)
			u.Path = forged.path(proof, rest)
			copied.Webhooks[i].ClientConfig.URL = ptr.To(u.String())
			copied.Webhooks[i].FailurePolicy = ptr.To(admissionregistrationv1.Fail)
		}
		require.NoError(t, s.env.Client.Create(ctx, copied))
		eventually(t, time.Minute, "the copied registration at "+forged.name+" refused", func() error {
			err := s.env.Client.Create(ctx, pod.DeepCopy(), client.DryRunAll)
			if err == nil {
				return errors.New("admitted (the kube-apiserver may not call the new registration yet)")
			}
			if !strings.Contains(err.Error(), forged.refusal) {
				return fmt.Errorf("refused, but not for the proof: %w", err)
			}
			return nil
		})
		require.NoError(t, s.env.Client.Delete(ctx, copied))
		t.Logf("%s: a copy of its registration at %s refused: the proof is %s's", s.tenant, forged.name, s.tenant)
	}
}

// assertOwnManagedResources: two shoots of one seed, served by the one deployment at once, each
// get their own ManagedResource of the same name applied into their own cluster; deleting one
// shoot's takes its objects from that shoot only.
func assertOwnManagedResources(t *testing.T, shoots ...*shoot) {
	t.Helper()
	ctx := context.Background()
	const name = "e2e-both"
	key := client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}
	mrs := map[tenant.Name]*resourcesv1alpha1.ManagedResource{}
	for _, s := range shoots {
		ns := string(s.tenant)
		manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  shoot: %s\n", name, ns)
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"objects.yaml": []byte(manifest)}}))
		mr := &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: name}}},
		}
		require.NoError(t, c.Create(ctx, mr))
		mrs[s.tenant] = mr
		t.Cleanup(func() { deleteManagedResource(t, mr) })
	}
	took := eventually(t, 2*time.Minute, "each shoot's own ConfigMap", func() error {
		for _, s := range shoots {
			cm := &corev1.ConfigMap{}
			if err := s.env.Client.Get(ctx, key, cm); err != nil {
				return fmt.Errorf("%s: %w", s.tenant, err)
			}
			if cm.Data["shoot"] != string(s.tenant) {
				return fmt.Errorf("%s holds the ConfigMap of %s", s.tenant, cm.Data["shoot"])
			}
		}
		return nil
	})
	t.Logf("%d shoots' ManagedResources of one name, each applied into its own shoot within %s", len(shoots), took.Round(time.Millisecond))

	first, others := shoots[0], shoots[1:]
	deleteManagedResource(t, mrs[first.tenant])
	err := first.env.Client.Get(ctx, key, &corev1.ConfigMap{})
	require.True(t, apierrors.IsNotFound(err), "its ConfigMap is deleted from %s: %v", first.tenant, err)
	for _, s := range others {
		cm := &corev1.ConfigMap{}
		require.NoError(t, s.env.Client.Get(ctx, key, cm), "%s keeps its own", s.tenant)
		assert.Equal(t, string(s.tenant), cm.Data["shoot"])
	}
}

// assertRegistered: the shoot holds the registrations that apply to it, pod-scheduler-name
// only with the bin-packing profile.
func assertRegistered(t *testing.T, s *shoot, binPacking bool) {
	t.Helper()
	list := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	require.NoError(t, s.env.Client.List(context.Background(), list, client.MatchingLabels(tenant.RegistrationLabels)))
	var names []string
	for _, r := range list.Items {
		names = append(names, r.Name)
	}
	want := []string{"gardener-knative-high-availability-config", "gardener-knative-kubernetes-service-host", "gardener-knative-projected-token-mount",
		"gardener-knative-system-components-config", "gardener-knative-token-invalidator", "gardener-knative-vpa-in-place-updates"}
	if binPacking {
		want = append(want, "gardener-knative-pod-scheduler-name")
	}
	require.ElementsMatch(t, want, names, "%s", s.tenant)
}

// assertOwnAnswers creates a Pod in the shoot (a dry run) until the best-effort webhooks, which
// may be waking from zero, have answered: it gets the shoot's own API server host and the
// scheduler of its profile.
func assertOwnAnswers(t *testing.T, s *shoot, host, scheduler string) {
	t.Helper()
	ctx := context.Background()
	var pod *corev1.Pod
	took := eventually(t, 2*time.Minute, "KUBERNETES_SERVICE_HOST injected in "+string(s.tenant), func() error {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "own-answers"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.local/c:1"}}},
		}
		if err := s.env.Client.Create(ctx, pod, client.DryRunAll); err != nil {
			return err
		}
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == "KUBERNETES_SERVICE_HOST" {
				return nil
			}
		}
		return errors.New("not yet (grm-webhooks-best-effort may be waking)")
	})
	require.Equal(t, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: host}}, pod.Spec.Containers[0].Env)
	require.Equal(t, scheduler, pod.Spec.SchedulerName)
	t.Logf("%s: a Pod got KUBERNETES_SERVICE_HOST=%s and scheduler %s within %s", s.tenant, host, scheduler, took.Round(time.Millisecond))
}

// assertAccessTokenRenewed makes the shoot's access token due (its renewal time passed): the
// token requestor, deployed by config/ with its defaults, requests a new one of the shoot's
// gardener-resource-manager ServiceAccount, with which the functions and servers go on reaching
// the shoot.
func assertAccessTokenRenewed(t *testing.T, s *shoot) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: string(s.tenant), Name: tenant.DefaultAccessSecret}
	require.NoError(t, c.Get(ctx, key, secret))
	old := string(secret.Data["token"])
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Annotations[resourcesv1alpha1.ServiceAccountTokenRenewTimestamp] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	require.NoError(t, c.Patch(ctx, secret, patch))
	took := eventually(t, 3*time.Minute, "a renewed access token", func() error {
		if err := c.Get(ctx, key, secret); err != nil {
			return err
		}
		if string(secret.Data["token"]) == old {
			return errors.New("still the old token")
		}
		return nil
	})
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: string(secret.Data["token"]), Audiences: []string{v1beta1constants.GardenerAudience}}}
	require.NoError(t, s.env.Client.Create(ctx, review))
	require.True(t, review.Status.Authenticated, "%+v", review.Status)
	require.Equal(t, "system:serviceaccount:kube-system:gardener-resource-manager", review.Status.User.Username)
	t.Logf("access token of %s renewed within %s", s.tenant, took.Round(time.Millisecond))
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

// editRevertedBy edits the ManagedResource's ConfigMap in the shoot (each attempt to another
// value, so that every edit is a change with its own event) and waits a minute for it to be
// reverted, which only the target source's event can do that soon (the sync sweep runs hourly).
func editRevertedBy(ctx context.Context, t *testing.T, s *shoot, attempt int) (took time.Duration, byEvent bool) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	require.NoError(t, s.env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "e2e-config"}, cm))
	cm.Data["greeting"] = fmt.Sprintf("edited by hand (%d)", attempt)
	require.NoError(t, s.env.Client.Update(ctx, cm))
	start := time.Now()
	for time.Since(start) < time.Minute {
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil && cm.Data["greeting"] == "as the ManagedResource says" {
			return time.Since(start), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), false
}

// logPodsSince logs what the named pods of the deployment wrote since a time, from the
// kubelet's pod logs in the cluster's directory (CRI format: a timestamp first on every line).
func logPodsSince(t *testing.T, since time.Time, names ...string) {
	t.Helper()
	for _, name := range names {
		// Not every name is a Knative Service (the target source is a ContainerSource), so its
		// pods are looked for in every namespace of ours: a diagnosis must not fail the test.
		var files []string
		for _, ns := range ourNamespaces {
			found, _ := filepath.Glob(filepath.Join(os.Getenv("CLUSTER_DIR"), "pod-logs", ns+"_"+name+"-*", "*", "*.log"))
			files = append(files, found...)
		}
		if len(files) == 0 {
			t.Logf("%s: no pod logs in %v", name, ourNamespaces)
		}
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
