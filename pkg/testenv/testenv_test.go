package testenv_test

import (
	"context"
	"slices"
	"testing"

	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// served is what Gardener serves of one kind: its versions (the first is the one a stand-in
// stores) and, per version, the field selectors beyond metadata.name and metadata.namespace.
type served struct {
	versions []string
	fields   map[string][]string
	// refused are field selectors a request must not get answered by the stand-in: those
	// gardener-apiserver does not offer, and those it offers that a CRD cannot offer faithfully.
	refused []string
}

// gardener is what Gardener v1.150 serves, kind by kind. core, seedmanagement, operations and
// security are gardener-apiserver's: the versions its REST storage maps register
// (pkg/apiserver/registry/*/rest), the field selectors its field label conversion funcs accept
// (pkg/apis/*/v*/conversions.go) and its strategies' ToSelectableFields set. The other groups are
// real CRDs (Gardener's generated extensions and operator CRDs, etcd-druid's, MCM's): one
// version, no selectable fields.
var gardener = map[string]served{
	"backupbuckets.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"spec.seedName", "spec.shootRef.name", "spec.shootRef.namespace"},
	}},
	"backupentries.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"spec.seedName", "spec.bucketName", "spec.shootRef.name", "spec.shootRef.namespace"},
	}},
	"cloudprofiles.core.gardener.cloud": {versions: []string{"v1beta1"}},
	// gardener-apiserver serves ControllerDeployments in v1 too (and only them in v1).
	"controllerdeployments.core.gardener.cloud": {versions: []string{"v1beta1", "v1"}},
	"controllerinstallations.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"spec.registrationRef.name", "spec.seedRef.name", "spec.shootRef.name", "spec.shootRef.namespace"},
	}},
	"controllerregistrations.core.gardener.cloud": {versions: []string{"v1beta1"}},
	"exposureclasses.core.gardener.cloud":         {versions: []string{"v1beta1"}},
	"internalsecrets.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"type"},
	}},
	// gardener-apiserver has a constant for spec.parent.name but no field selector on it.
	"namespacedcloudprofiles.core.gardener.cloud": {versions: []string{"v1beta1"}, refused: []string{"spec.parent.name"}},
	"projects.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"spec.namespace"},
	}},
	"quotas.core.gardener.cloud":         {versions: []string{"v1beta1"}},
	"secretbindings.core.gardener.cloud": {versions: []string{"v1beta1"}},
	"seeds.core.gardener.cloud":          {versions: []string{"v1beta1"}},
	// gardener-apiserver also selects Shoots on spec.cloudProfile.Name and spec.cloudProfile.Kind,
	// capitalised and read from the Go struct. A CRD's selectable field reads the JSON key its
	// path names, and Shoots have name and kind there: it would match nothing. The stand-in
	// refuses them rather than answer them wrongly.
	"shoots.core.gardener.cloud": {versions: []string{"v1beta1"}, fields: map[string][]string{
		"v1beta1": {"spec.seedName", "status.seedName", "spec.cloudProfileName"},
	}, refused: []string{"spec.cloudProfile.Name", "spec.cloudProfile.Kind"}},
	"shootstates.core.gardener.cloud": {versions: []string{"v1beta1"}},

	"managedseeds.seedmanagement.gardener.cloud": {versions: []string{"v1alpha1"}, fields: map[string][]string{
		"v1alpha1": {"spec.shoot.name"},
	}},
	"managedseedsets.seedmanagement.gardener.cloud": {versions: []string{"v1alpha1"}},

	"bastions.operations.gardener.cloud": {versions: []string{"v1alpha1"}, fields: map[string][]string{
		"v1alpha1": {"spec.seedName", "spec.shootRef.name"},
	}},

	"credentialsbindings.security.gardener.cloud": {versions: []string{"v1alpha1"}},
	"workloadidentities.security.gardener.cloud":  {versions: []string{"v1alpha1"}},

	"backupbuckets.extensions.gardener.cloud":            {versions: []string{"v1alpha1"}},
	"backupentries.extensions.gardener.cloud":            {versions: []string{"v1alpha1"}},
	"bastions.extensions.gardener.cloud":                 {versions: []string{"v1alpha1"}},
	"clusters.extensions.gardener.cloud":                 {versions: []string{"v1alpha1"}},
	"containerruntimes.extensions.gardener.cloud":        {versions: []string{"v1alpha1"}},
	"controlplanes.extensions.gardener.cloud":            {versions: []string{"v1alpha1"}},
	"dnsrecords.extensions.gardener.cloud":               {versions: []string{"v1alpha1"}},
	"extensions.extensions.gardener.cloud":               {versions: []string{"v1alpha1"}},
	"infrastructures.extensions.gardener.cloud":          {versions: []string{"v1alpha1"}},
	"networks.extensions.gardener.cloud":                 {versions: []string{"v1alpha1"}},
	"operatingsystemconfigs.extensions.gardener.cloud":   {versions: []string{"v1alpha1"}},
	"selfhostedshootexposures.extensions.gardener.cloud": {versions: []string{"v1alpha1"}},
	"workers.extensions.gardener.cloud":                  {versions: []string{"v1alpha1"}},

	"extensions.operator.gardener.cloud": {versions: []string{"v1alpha1"}},
	"etcds.druid.gardener.cloud":         {versions: []string{"v1alpha1"}},
	"machines.machine.sapcloud.io":       {versions: []string{"v1alpha1"}},
}

// TestStandInsServeWhatGardenerServes pins every stand-in CRD to the versions and field
// selectors Gardener serves for its kind, no less and no more. A new stand-in needs its entry.
func TestStandInsServeWhatGardenerServes(t *testing.T) {
	crds, err := testenv.GardenerCRDs()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, crd := range crds {
		t.Run(crd.Name, func(t *testing.T) {
			want, ok := gardener[crd.Name]
			require.True(t, ok, "no entry for the stand-in %s", crd.Name)
			seen[crd.Name] = true

			var versions, stored []string
			fields := map[string][]string{}
			for _, v := range crd.Spec.Versions {
				require.True(t, v.Served, "version %s is not served: Gardener serves what it declares", v.Name)
				versions = append(versions, v.Name)
				if v.Storage {
					stored = append(stored, v.Name)
				}
				for _, f := range v.SelectableFields {
					fields[v.Name] = append(fields[v.Name], f.JSONPath[1:])
				}
				slices.Sort(fields[v.Name])
			}
			assert.ElementsMatch(t, want.versions, versions, "served versions")
			assert.Equal(t, []string{want.versions[0]}, stored, "stored version")
			for v := range fields {
				assert.Contains(t, want.versions, v, "selectable fields of a version Gardener does not serve")
			}
			for _, v := range want.versions {
				wantFields := slices.Clone(want.fields[v])
				slices.Sort(wantFields)
				assert.Equal(t, wantFields, fields[v], "selectable fields of %s", v)
			}
			if len(want.versions) > 1 {
				// conversion None only rewrites apiVersion: the schemas must say the same.
				for _, v := range crd.Spec.Versions[1:] {
					assert.Equal(t, crd.Spec.Versions[0].Schema, v.Schema, "schema of %s", v.Name)
				}
			}
		})
	}
	for name := range gardener {
		assert.True(t, seen[name], "%s has an entry but no stand-in", name)
	}
}

// TestStandInsOnAPIServer: the kube-apiserver accepts every field selector the stand-ins declare
// in every version, answers them by the objects' fields, refuses those Gardener does not offer,
// and serves every version.
func TestStandInsOnAPIServer(t *testing.T) {
	env, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	crds, err := testenv.GardenerCRDs()
	require.NoError(t, err)

	listIn := func(gvk schema.GroupVersionKind, namespaced bool, opts ...client.ListOption) error {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if namespaced {
			opts = append(opts, client.InNamespace("default"))
		}
		return env.Client.List(ctx, list, opts...)
	}

	t.Run("every version and field selector", func(t *testing.T) {
		for _, crd := range crds {
			namespaced := crd.Spec.Scope == "Namespaced"
			want := gardener[crd.Name]
			for _, v := range want.versions {
				gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v, Kind: crd.Spec.Names.Kind}
				assert.NoError(t, listIn(gvk, namespaced), "%s", gvk)
				for _, field := range want.fields[v] {
					assert.NoError(t, listIn(gvk, namespaced, client.MatchingFields{field: "x"}), "%s by %s", gvk, field)
				}
				for _, field := range want.refused {
					err := listIn(gvk, namespaced, client.MatchingFields{field: "x"})
					assert.True(t, apierrors.IsBadRequest(err), "%s by %s must be refused: %v", gvk, field, err)
				}
			}
		}
	})

	// Mappers that rely on field selectors would pass here and fail against a real garden
	// cluster (or the reverse) if the stand-ins did not select as gardener-apiserver does.
	t.Run("Bastion by spec.shootRef.name", func(t *testing.T) {
		for _, name := range []string{"a", "b"} {
			b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "bastion-" + name, Namespace: "default"}}
			b.Spec.ShootRef.Name = "shoot-" + name
			require.NoError(t, env.Client.Create(ctx, b))
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(operationsv1alpha1.SchemeGroupVersion.WithKind("BastionList"))
		require.NoError(t, env.Client.List(ctx, list, client.InNamespace("default"), client.MatchingFields{"spec.shootRef.name": "shoot-b"}))
		require.Len(t, list.Items, 1)
		require.Equal(t, "bastion-b", list.Items[0].Name)
	})

	t.Run("InternalSecret by type", func(t *testing.T) {
		for name, typ := range map[string]string{"opaque": "Opaque", "tls": "kubernetes.io/tls"} {
			s := &unstructured.Unstructured{}
			s.SetAPIVersion("core.gardener.cloud/v1beta1")
			s.SetKind("InternalSecret")
			s.SetNamespace("default")
			s.SetName("internalsecret-" + name)
			s.Object["type"] = typ
			require.NoError(t, env.Client.Create(ctx, s))
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "core.gardener.cloud", Version: "v1beta1", Kind: "InternalSecretList"})
		require.NoError(t, env.Client.List(ctx, list, client.InNamespace("default"), client.MatchingFields{"type": "kubernetes.io/tls"}))
		require.Len(t, list.Items, 1)
		require.Equal(t, "internalsecret-tls", list.Items[0].Name)
	})

	t.Run("ControllerDeployment in v1", func(t *testing.T) {
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("core.gardener.cloud/v1")
		d.SetKind("ControllerDeployment")
		d.SetName("controllerdeployment-v1")
		d.Object["helm"] = map[string]any{"ociRepository": map[string]any{"ref": "example.com/chart:1.0.0"}}
		require.NoError(t, env.Client.Create(ctx, d))
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("core.gardener.cloud/v1")
		got.SetKind("ControllerDeployment")
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: d.GetName()}, got))
		ref, _, _ := unstructured.NestedString(got.Object, "helm", "ociRepository", "ref")
		assert.Equal(t, "example.com/chart:1.0.0", ref)
	})
}
