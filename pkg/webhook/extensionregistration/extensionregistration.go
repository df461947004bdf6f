// Package extensionregistration validates the registration of extensions in the garden: the
// ControllerRegistrations and ControllerDeployments of core.gardener.cloud, as
// gardener-apiserver validates them (its registry's validation, after its defaulting, and its
// ControllerRegistrationResources admission plugin: exactly one registration controls a
// kind/type primarily), and operator.gardener.cloud's Extensions, as gardener-operator's
// validating webhook does (spec and primary immutability on CREATE and UPDATE; no DELETE while
// required). The rules live in Gardener's main module, which this one does not import; they are
// written out in validation.go.
package extensionregistration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

// Name is the webhook's name.
const Name = "extension-registration"

// The paths it answers at: gardener-operator's for Extensions, controller-runtime's convention
// for the kinds gardener-apiserver validates in-process.
const (
	ExtensionPath              = "/webhooks/validate-operator-gardener-cloud-v1alpha1-extension"
	ControllerRegistrationPath = "/webhooks/validate-core-gardener-cloud-v1beta1-controllerregistration"
	ControllerDeploymentPath   = "/webhooks/validate-core-gardener-cloud-v1beta1-controllerdeployment"
)

var (
	registrationKind   = gardencorev1beta1.Kind("ControllerRegistration")
	deploymentKind     = gardencorev1beta1.Kind("ControllerDeployment")
	extensionKind      = operatorv1alpha1.Kind("Extension")
	registrationsGR    = gardencorev1beta1.Resource("controllerregistrations")
	registrationListGV = gardencorev1beta1.SchemeGroupVersion.WithKind("ControllerRegistrationList")
)

// Webhook is the constructor the server registers. GRM's component configuration does not know
// it: it is served when WEBHOOKS names it.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(*componentconfig.ResourceManagerFile) bool { return false },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		wh := webhook.Admission(Name, ExtensionPath, Handler(deps.Target), deps.Log)
		wh.MorePaths = []string{ControllerRegistrationPath, ControllerDeploymentPath}
		return wh, nil
	},
}

// Handler validates CREATE and UPDATE of ControllerRegistrations, ControllerDeployments and
// Extensions, and DELETE of Extensions. registrations reads the cluster's ControllerRegistrations
// (live: one LIST per CREATE or UPDATE of a valid registration, as gardener-apiserver's plugin
// reads them, so that two registrations created back to back cannot both pass).
func Handler(registrations client.Reader) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
		switch {
		case gk == extensionKind && req.Kind.Version == operatorv1alpha1.SchemeGroupVersion.Version:
			return validateExtension(req)
		case req.Kind.Version != gardencorev1beta1.SchemeGroupVersion.Version:
		case gk == registrationKind:
			return validateRegistration(ctx, registrations, req)
		case gk == deploymentKind:
			return validateDeployment(req)
		}
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s does not validate %s/%s %s", Name, req.Kind.Group, req.Kind.Version, req.Kind.Kind))
	})
}

func validateRegistration(ctx context.Context, registrations client.Reader, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	registration := &gardencorev1beta1.ControllerRegistration{}
	if err := json.Unmarshal(req.Object.Raw, registration); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// gardener-apiserver validates what it defaulted.
	gardencorev1beta1.SetObjectDefaults_ControllerRegistration(registration)
	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		old := &gardencorev1beta1.ControllerRegistration{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		gardencorev1beta1.SetObjectDefaults_ControllerRegistration(old)
		errs = ValidateControllerRegistrationUpdate(registration, old)
	} else {
		errs = ValidateControllerRegistration(registration)
	}
	if len(errs) > 0 {
		return invalid(registrationKind, registration.Name, errs)
	}

	others, err := listRegistrations(ctx, registrations)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if conflicts := PrimaryConflicts(registration, others); len(conflicts) > 0 {
		status := apierrors.NewForbidden(registrationsGR, registration.Name, conflicts[0]).ErrStatus
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	return admission.Allowed("")
}

// listRegistrations reads every ControllerRegistration. The webhook server's clients know only
// Kubernetes' own kinds, so they are listed unstructured.
func listRegistrations(ctx context.Context, reader client.Reader) ([]gardencorev1beta1.ControllerRegistration, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(registrationListGV)
	if err := reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ControllerRegistrations: %w", err)
	}
	registrations := make([]gardencorev1beta1.ControllerRegistration, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &registrations[i]); err != nil {
			return nil, fmt.Errorf("decoding ControllerRegistration %q: %w", list.Items[i].GetName(), err)
		}
	}
	return registrations, nil
}

func validateDeployment(req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	deployment := &gardencorev1beta1.ControllerDeployment{}
	if err := json.Unmarshal(req.Object.Raw, deployment); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var helm *gardencorev1beta1.HelmControllerDeployment
	if deployment.Type == HelmType {
		helm = &gardencorev1beta1.HelmControllerDeployment{}
		if len(deployment.ProviderConfig.Raw) > 0 {
			if err := json.Unmarshal(deployment.ProviderConfig.Raw, helm); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the Helm deployment in providerConfig: %w", err))
			}
		}
	}
	if errs := ValidateControllerDeployment(deployment, helm); len(errs) > 0 {
		return invalid(deploymentKind, deployment.Name, errs)
	}
	return admission.Allowed("")
}

// HelmType is the v1beta1 ControllerDeployment type of v1's .helm.
const HelmType = "helm"

func validateExtension(req admission.Request) admission.Response {
	switch req.Operation {
	case admissionv1.Delete:
		ext := &operatorv1alpha1.Extension{}
		if err := json.Unmarshal(req.OldObject.Raw, ext); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if msg := StillRequired(ext); msg != "" {
			return admission.Denied(msg)
		}
		return admission.Allowed("")
	case admissionv1.Create, admissionv1.Update:
	default:
		return admission.Allowed("")
	}
	ext := &operatorv1alpha1.Extension{}
	if err := json.Unmarshal(req.Object.Raw, ext); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	DefaultExtension(ext)
	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		old := &operatorv1alpha1.Extension{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		DefaultExtension(old)
		errs = ValidateExtensionUpdate(old, ext)
	} else {
		errs = ValidateExtension(ext)
	}
	if len(errs) > 0 {
		return invalid(extensionKind, ext.Name, errs)
	}
	return admission.Allowed("")
}

// invalid answers as Gardener does: 422 Invalid with one cause per violated rule.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	status := apierrors.NewInvalid(gk, name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}
