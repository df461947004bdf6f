package samples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionregistration"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
)

// The samples pass the validation a cluster runs on them (config/webhook-extension-registration.yaml:
// Gardener's rules for ControllerRegistrations, ControllerDeployments and Extensions;
// config/webhook-extension-validation.yaml: the extensions.gardener.cloud kinds): `make run`
// runs no webhooks, the one-node cluster does, and it refused two samples once.
func TestSamplesPassGardenersValidation(t *testing.T) {
	var validated int
	var c client.Client
	registration, extension := extensionregistration.Handler(lateReader{&c}), extensionvalidation.Handler()
	c = fake.NewClientBuilder().WithScheme(scheme.Gardener).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			gvk, err := apiutil.GVKForObject(obj, scheme.Gardener)
			if err != nil {
				return err
			}
			var handler admission.Handler
			switch gk := gvk.GroupKind(); {
			case gk == gardencorev1beta1.Kind("ControllerRegistration"), gk == gardencorev1beta1.Kind("ControllerDeployment"), gk == operatorv1alpha1.Kind("Extension"):
				handler = registration
			case gk.Group == extensionsv1alpha1.SchemeGroupVersion.Group && gk.Kind != "Cluster":
				handler = extension
			}
			if handler != nil {
				raw, err := json.Marshal(obj)
				if err != nil {
					return err
				}
				resp := handler.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
					Operation: admissionv1.Create, Name: obj.GetName(),
					Kind:   metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
					Object: runtime.RawExtension{Raw: raw},
				}})
				if !resp.Allowed {
					return fmt.Errorf("%s %s refused: %s", gvk.Kind, obj.GetName(), resp.Result.Message)
				}
				validated++
			}
			return cl.Create(ctx, obj, opts...)
		},
			// No kind has a status subresource here: a status write is a write of the object.
			SubResourceUpdate: func(ctx context.Context, cl client.Client, _ string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
				return cl.Update(ctx, obj)
			},
		}).
		Build()
	require.NoError(t, samples.Create(context.Background(), samples.Clusters{Garden: c, Runtime: c}, "registry.local/charts/sample-extension:0.1.0"))
	require.Positive(t, validated, "the samples hold registrations")
	t.Logf("%d registrations, deployments, Extensions and extension resources validated", validated)
}

// lateReader reads through the client once it is built: the handler reads the registrations
// already created, as gardener-apiserver's plugin does.
type lateReader struct{ c *client.Client }

func (r lateReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return (*r.c).Get(ctx, key, obj, opts...)
}

func (r lateReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return (*r.c).List(ctx, list, opts...)
}

// A line is done only when none of its steps waits and each of its parts has a step done.
func TestDone(t *testing.T) {
	for line, done := range map[string]bool{
		"registration chain: Extension sample-extension ✓ → CR/CD ✓ → Shoot ✓ → CI sample-extension-x2b4k ✓ → release sample-extension deployed on seed ✓": true,
		// What an earlier Done took for complete: the installation not made yet.
		"registration chain: Extension sample-extension ✓ → CR/CD ✓ → Shoot ✓ → no CI on local-seed … → no release on seed …":            false,
		"registration chain: Extension sample-extension ✓ → CR ? (connection refused) → Shoot ✓":                                         false,
		"GRM: ManagedResource a/b ✓ → 3 objects in shoot ✓ → manual edit pending (3s) … → healthy …\nGRM: token ✓":                       false,
		"GRM: ManagedResource a/b ✓ → 3 objects in shoot ✓ → manual edit reverted ✓ → healthy False (DeploymentUnhealthy)\nGRM: token ✓": true,
		"GRM node: Node n: taint removed ✓\nGRM CSR approver: kubelet-serving CSR c of n denied: no Machine":                             false,
		"GRM: ManagedResource a/b ✓ → 3 objects in shoot ✓ → manual edit reverted ✓ → healthy Unknown (ChecksPending) …\nGRM: token ✓":   false,
	} {
		require.Equal(t, done, samples.Done(line), line)
	}
}
