package csrapprover

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

func TestDeclaration(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.Equal(t, function.PerSeed, Function.DeploymentMode())
}

// The file's keys, the environment over the file, and off unless enabled (Gardener's default,
// with no machine namespace).
func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
controllers:
  csrApprover:
    enabled: true
    machineNamespace: shoot--p--a
`), 0o600))
	loaded, err := function.LoadConfig(Function, function.ComponentConfigs{ResourceManager: path})
	require.NoError(t, err)
	assert.Equal(t, &Config{Enabled: true, MachineNamespace: ptr.To("shoot--p--a")}, loaded)

	t.Setenv("CSR_APPROVER_MACHINE_NAMESPACE", "shoot--p--b")
	loaded, err = function.LoadConfig(Function, function.ComponentConfigs{ResourceManager: path})
	require.NoError(t, err)
	assert.Equal(t, ptr.To("shoot--p--b"), loaded.(*Config).MachineNamespace)

	defaults, err := function.LoadConfig(Function, function.ComponentConfigs{})
	require.NoError(t, err)
	cfg := defaults.(*Config)
	assert.False(t, cfg.Enabled, "off unless configured")
	sweep, _ := Function.Sweep("pending")
	assert.True(t, sweep.Off(cfg))
}

// Per seed the tenant's namespace holds its Machines, whatever is configured; otherwise the
// configured namespace does.
func TestMachineNamespace(t *testing.T) {
	r := &Reconciler{Config: &Config{MachineNamespace: ptr.To("configured")}}
	assert.Equal(t, ptr.To("configured"), r.machineNamespace(t.Context()))
	assert.Equal(t, ptr.To("shoot--p--a"), r.machineNamespace(tenant.With(t.Context(), "shoot--p--a")))
	assert.Nil(t, (&Reconciler{Config: &Config{}}).machineNamespace(t.Context()))
}

func event(t *testing.T, csr *certificatesv1.CertificateSigningRequest, deleted bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csr)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"))
	return function.Event{Cluster: function.Target, Kind: u.GroupVersionKind(), Key: function.Key{Name: csr.Name}, Deleted: deleted, Object: u}
}

// Gardener's predicates: creations and updates of the two signers' requests; and the event alone
// shows a request decided already.
func TestPredicate(t *testing.T) {
	csr := func(signer string, conditions ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer}}
		for _, t := range conditions {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
		}
		return c
	}
	assert.True(t, Predicate(event(t, csr(certificatesv1.KubeletServingSignerName), false)))
	assert.True(t, Predicate(event(t, csr(certificatesv1.KubeAPIServerClientSignerName), false)))
	assert.True(t, Predicate(event(t, csr(certificatesv1.KubeletServingSignerName, certificatesv1.CertificateFailed), false)), "failed is not decided")
	assert.False(t, Predicate(event(t, csr(certificatesv1.KubeletServingSignerName), true)), "a deletion")
	assert.False(t, Predicate(event(t, csr(certificatesv1.KubeAPIServerClientKubeletSignerName), false)), "kube-controller-manager approves kubelets' client certificates")
	assert.False(t, Predicate(event(t, csr("example.com/signer"), false)))
	assert.False(t, Predicate(event(t, csr(certificatesv1.KubeletServingSignerName, certificatesv1.CertificateApproved), false)), "approved")
	assert.False(t, Predicate(event(t, csr(certificatesv1.KubeAPIServerClientSignerName, certificatesv1.CertificateDenied), false)), "denied")
	issued := csr(certificatesv1.KubeletServingSignerName)
	issued.Status.Certificate = []byte("cert")
	assert.False(t, Predicate(event(t, issued, false)), "issued")
}

// noReads fails the test on any read.
type noReads struct{ t *testing.T }

func (r noReads) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	r.t.Errorf("read %s", key)
	return nil
}

func (r noReads) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.t.Error("listed")
	return nil
}

// Names no object can have are not found without a read, as in Gardener's cache.
func TestFactsSkipImpossibleNames(t *testing.T) {
	f := &facts{target: noReads{t}, source: noReads{t}}
	ctx := t.Context()
	node, err := f.Node(ctx, "Not_A_Name")
	assert.NoError(t, err)
	assert.Nil(t, node)
	m, err := f.Machine(ctx, "shoot--p--a", "")
	assert.NoError(t, err)
	assert.Nil(t, m)
	ms, err := f.MachinesOfNode(ctx, "shoot--p--a", strings.Repeat("n", 64)+".example")
	assert.NoError(t, err)
	assert.Empty(t, ms)
}

// Off, the reconciler reads and writes nothing; on, a request that does not parse is not decided
// and not written (retrying an immutable request cannot help).
func TestReconcileOffAndUnparsable(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName, Request: []byte("garbage")}}
	var writes int
	c := fake.NewClientBuilder().WithObjects(csr).WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			writes++
			return nil
		},
	}).Build()
	req := function.Request{Key: function.Key{Name: "csr"}, Reader: c, Target: c, Trigger: function.ByEvent}
	deps := function.ClusterClient{Reader: c, Writer: function.NewWriter(c)}

	off := &Reconciler{Config: &Config{}, Source: function.ClusterClient{Reader: noReads{t}}, Target: deps, Log: slog.New(slog.DiscardHandler)}
	assert.NoError(t, off.Reconcile(t.Context(), function.Request{Key: req.Key, Reader: noReads{t}, Target: noReads{t}}))

	on := &Reconciler{Config: &Config{Enabled: true}, Source: function.ClusterClient{Reader: noReads{t}}, Target: deps, Log: slog.New(slog.DiscardHandler)}
	err := on.Reconcile(t.Context(), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unable to parse csr")
	assert.Zero(t, writes)
}
