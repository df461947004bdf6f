package samples

import (
	"context"
	"fmt"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/helmrelease"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// RegistrationChain is the live view's line following the sample registration chain
// (controllerinstallationSamples) through the API servers: the Extension (in the runtime
// cluster), the ControllerRegistration and ControllerDeployment made of it, the Shoot that
// requires it, the ControllerInstallation on the seed (in the garden) and the Helm release in the
// seed.
type RegistrationChain struct {
	Garden, Runtime, Seed client.Client
}

// line reads the chain (a handful of requests) and renders it, e.g.
// "registration chain: Extension sample-extension ✓ → CR/CD ✓ → Shoot ✓ → CI sample-extension-x2b4k ✓ → release deployed on seed ✓".
func (c RegistrationChain) Line() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	steps := []string{c.extension(ctx), c.registration(ctx), c.shoot(ctx), c.installation(ctx), c.release(ctx)}
	return "registration chain: " + strings.Join(steps, " → ")
}

func (c RegistrationChain) extension(ctx context.Context) string {
	ext := &operatorv1alpha1.Extension{}
	if err := c.Runtime.Get(ctx, client.ObjectKey{Name: chainExtension}, ext); err != nil {
		return "Extension " + chainExtension + " " + mark(err)
	}
	if cond := function.GetCondition(ext.Status.Conditions, operatorv1alpha1.ExtensionInstalled); cond == nil || cond.Status != gardencorev1beta1.ConditionTrue {
		return "Extension " + chainExtension + " …"
	}
	return "Extension " + chainExtension + " ✓"
}

func (c RegistrationChain) registration(ctx context.Context) string {
	if err := c.Garden.Get(ctx, client.ObjectKey{Name: chainExtension}, &gardencorev1beta1.ControllerRegistration{}); err != nil {
		return "CR " + mark(err)
	}
	if err := c.Garden.Get(ctx, client.ObjectKey{Name: chainExtension}, &gardencorev1beta1.ControllerDeployment{}); err != nil {
		return "CD " + mark(err)
	}
	return "CR/CD ✓"
}

func (c RegistrationChain) shoot(ctx context.Context) string {
	err := c.Garden.Get(ctx, client.ObjectKey{Namespace: chainShootNamespace, Name: chainShoot}, &gardencorev1beta1.Shoot{})
	if apierrors.IsNotFound(err) {
		return "Shoot deleted"
	}
	return "Shoot " + mark(err)
}

func (c RegistrationChain) installation(ctx context.Context) string {
	ci, err := c.chainInstallation(ctx)
	switch {
	case err != nil:
		return "CI " + mark(err)
	case ci == nil:
		return "no CI on " + controllerinstallationSeed + " …"
	case ci.DeletionTimestamp != nil:
		return "CI " + ci.Name + " being deleted …"
	}
	if cond := function.GetCondition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationInstalled); cond == nil || cond.Status != gardencorev1beta1.ConditionTrue {
		return "CI " + ci.Name + " …"
	}
	return "CI " + ci.Name + " ✓"
}

// chainInstallation is the seed's installation of the chain's registration, nil when none.
func (c RegistrationChain) chainInstallation(ctx context.Context) (*gardencorev1beta1.ControllerInstallation, error) {
	list := &gardencorev1beta1.ControllerInstallationList{}
	if err := c.Garden.List(ctx, list, client.MatchingFields{"spec.registrationRef.name": chainExtension}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if ref := list.Items[i].Spec.SeedRef; ref != nil && ref.Name == controllerinstallationSeed {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// release reads Helm's release records of the chain's registration on the seed (metadata only:
// the status is a label), in whichever installation's namespace.
func (c RegistrationChain) release(ctx context.Context) string {
	records := &metav1.PartialObjectMetadataList{}
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.Seed.List(ctx, records, client.MatchingLabels{helmrelease.LabelOwner: helmrelease.OwnerHelm, helmrelease.LabelName: chainExtension}); err != nil {
		return "release " + mark(err)
	}
	if len(records.Items) == 0 {
		return "no release on seed …"
	}
	latest := controllerinstallation.LatestRelease(records.Items)
	if latest.Status == release.StatusDeployed {
		return fmt.Sprintf("release %s deployed on seed ✓", chainExtension)
	}
	return fmt.Sprintf("release %s %s on seed …", chainExtension, latest.Status)
}

// mark is ✓ without an error, "…" while the object does not exist yet, else the error.
func mark(err error) string {
	switch {
	case err == nil:
		return "✓"
	case apierrors.IsNotFound(err):
		return "…"
	default:
		return "? (" + err.Error() + ")"
	}
}
