// Package managedresource_test serves GRM's managedresource function in-process against real
// control planes: a seed (Source) holding the ManagedResources and their Secrets, and shoots
// (Targets) they are applied to, in single-target mode (one shoot, TARGET_KUBECONFIG) and per seed
// (two shoots enrolled as tenants of the seed, each reached with its own access), and sends it
// the CloudEvents its sources would.
package managedresource_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// seed holds the ManagedResources; shootA is the single target, and with shootB a tenant of
// the seed (tenantA, tenantB).
var seed, shootA, shootB *testenv.Env

const (
	tenantA tenant.Name = "shoot--p--a"
	tenantB tenant.Name = "shoot--p--b"
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	for _, env := range []**testenv.Env{&seed, &shootA, &shootB} {
		if *env, err = testenv.Start(); err != nil {
			return 0, err
		}
		defer func(e *testenv.Env) { _ = e.Stop() }(*env)
	}
	ctx := context.Background()
	if err := testenv.Enroll(ctx, seed.Client, tenantA, shootA); err != nil {
		return 0, err
	}
	if err := testenv.Enroll(ctx, seed.Client, tenantB, shootB); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// config is Gardener's default configuration of the function.
func config(t testing.TB) *managedresource.Config {
	t.Helper()
	cfg, err := functiontest.LoadConfig[managedresource.Config](managedresource.Function)
	require.NoError(t, err)
	return cfg
}

// singleTarget serves the function with shootA as its target.
func singleTarget(t testing.TB, opts ...functiontest.Option) *functiontest.Harness {
	return functiontest.New(t, seed, managedresource.Function, append([]functiontest.Option{functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(config(t))}, opts...)...)
}

// namespace creates a namespace of its own in the seed (for the ManagedResources) and the same
// in the target (for their objects).
func namespace(t testing.TB, target *testenv.Env) string {
	t.Helper()
	ns := seed.Namespace(t)
	require.NoError(t, target.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return ns
}

// manifest is a Secret of manifests and a ManagedResource referencing it.
func manifest(t testing.TB, namespace, name string, data map[string]string, mutate ...func(*resourcesv1alpha1.ManagedResource)) (*corev1.Secret, *resourcesv1alpha1.ManagedResource) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		secret.Data[k] = []byte(v)
	}
	require.NoError(t, seed.Client.Create(ctx, secret))
	mr := &resourcesv1alpha1.ManagedResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: name}}},
	}
	for _, m := range mutate {
		m(mr)
	}
	require.NoError(t, seed.Client.Create(ctx, mr))
	return secret, mr
}

// configMap is a ConfigMap's manifest.
func configMap(namespace, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: %s\n", name, namespace, value)
}

func docs(parts ...string) string { return strings.Join(parts, "---\n") }

// get reads the ManagedResource back.
func get(t testing.TB, mr *resourcesv1alpha1.ManagedResource) *resourcesv1alpha1.ManagedResource {
	t.Helper()
	out := &resourcesv1alpha1.ManagedResource{}
	require.NoError(t, seed.Client.Get(context.Background(), client.ObjectKeyFromObject(mr), out))
	return out
}

func condition(mr *resourcesv1alpha1.ManagedResource, t string) (status, reason, message string) {
	for _, c := range mr.Status.Conditions {
		if string(c.Type) == t {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}
