package enrolment

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

var key = func() tenantproof.Key {
	k, err := tenantproof.NewKey(time.Now())
	if err != nil {
		panic(err)
	}
	return k
}()

var proofA = "shoot--p--a" + tenantproof.Separator + key.Proof("shoot--p--a")

func names(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(o.GetName(), "gardener-knative-"))
	}
	return out
}

// Each tenant gets what gardenlet registers for its shoot (docs/configuration.md).
func TestRegistrationsThatApply(t *testing.T) {
	balanced := &tenant.Settings{KubernetesServiceHost: "api.a.p.internal.example.com"}
	binPacking := &tenant.Settings{KubernetesServiceHost: "api.b.p.internal.example.com", SchedulerName: tenant.BinPackingSchedulerName, PodTopologySpreadConstraints: true}
	for name, tc := range map[string]struct {
		settings *tenant.Settings
		want     []string
	}{
		"balanced": {balanced, []string{"high-availability-config", "kubernetes-service-host", "projected-token-mount", "system-components-config", "token-invalidator", "vpa-in-place-updates"}},
		"bin-packing, MatchLabelKeysInPodTopologySpread off": {binPacking, []string{
			"high-availability-config", "kubernetes-service-host", "pod-scheduler-name", "pod-topology-spread-constraints", "projected-token-mount", "system-components-config", "token-invalidator", "vpa-in-place-updates",
		}},
		"no address advertised yet": {&tenant.Settings{}, []string{"high-availability-config", "projected-token-mount", "system-components-config", "token-invalidator", "vpa-in-place-updates"}},
		"workerless":                {&tenant.Settings{Workerless: true, KubernetesServiceHost: "api.c", SchedulerName: tenant.BinPackingSchedulerName}, []string{"token-invalidator"}},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := Registrations("shoot--p--a", tc.settings, Options{CABundle: []byte("ca"), Key: key})
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(objs))
		})
	}
}

// Every url is at the tenant's path with the CA bundle; -server replaces the host, and the
// scale-to-zero variant has the longest timeouts.
func TestRegistrationsAreTheTenants(t *testing.T) {
	settings := &tenant.Settings{KubernetesServiceHost: "api.a"}
	objs, err := Registrations("shoot--p--a", settings, Options{CABundle: []byte("ca"), Key: key})
	require.NoError(t, err)
	for _, obj := range objs {
		m := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
		for _, w := range m.Webhooks {
			// The fail-closed ones at the pods' own TLS, the best-effort ones through the ingress.
			assert.Regexp(t, `^https://(grm-webhooks-tls\.gardener-knative\.svc|grm-webhooks-best-effort\.gardener-knative\.svc\.cluster\.local)/`+regexp.QuoteMeta(proofA)+`/webhooks/`, *w.ClientConfig.URL)
			assert.Equal(t, []byte("ca"), w.ClientConfig.CABundle)
			assert.LessOrEqual(t, *w.TimeoutSeconds, int32(10))
		}
		assert.Equal(t, tenant.RegistrationLabels, m.Labels)
	}
	objs, err = Registrations("shoot--p--a", settings, Options{Server: "https://127.0.0.1:9443", ScaleToZero: true, OptIn: []string{"endpoint-slice-hints"}, Key: key})
	require.NoError(t, err)
	assert.Contains(t, names(objs), "endpoint-slice-hints")
	for _, obj := range objs {
		for _, w := range obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks {
			assert.True(t, strings.HasPrefix(*w.ClientConfig.URL, "https://127.0.0.1:9443/"+proofA+"/webhooks/"), *w.ClientConfig.URL)
			assert.Equal(t, int32(30), *w.TimeoutSeconds)
		}
	}
	_, err = Registrations("shoot--p--a", settings, Options{OptIn: []string{"nonexistent"}, Key: key})
	assert.Error(t, err)
	_, err = Registrations("shoot--p--a", settings, Options{})
	assert.ErrorIs(t, err, tenantproof.ErrNoKey, "no url without a proof")
}

func TestAuthorizerKubeconfig(t *testing.T) {
	data, err := AuthorizerKubeconfig("shoot--p--a", &tenant.Settings{}, Options{CABundle: []byte("ca"), Server: "https://127.0.0.1:9443", Key: key})
	require.NoError(t, err)
	kc, err := clientcmd.Load(data)
	require.NoError(t, err)
	for _, c := range kc.Clusters {
		assert.Equal(t, "https://127.0.0.1:9443/"+proofA+"/webhooks/auth/nodeagent", c.Server)
		assert.Equal(t, []byte("ca"), c.CertificateAuthorityData)
	}
	data, err = AuthorizerKubeconfig("shoot--p--a", &tenant.Settings{Workerless: true}, Options{})
	require.NoError(t, err)
	assert.Nil(t, data, "a workerless shoot has no node agents")
}
