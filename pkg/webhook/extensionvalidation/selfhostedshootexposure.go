package extensionvalidation

import (
	"fmt"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var addressTypes = sets.New(corev1.NodeHostName, corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS)

var selfHostedShootExposures = rules[extensionsv1alpha1.SelfHostedShootExposure, *extensionsv1alpha1.SelfHostedShootExposure]{
	kind:       extensionsKind("SelfHostedShootExposure"),
	noun:       "SelfHostedShootExposure",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.SelfHostedShootExposure) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.SelfHostedShootExposure) field.ErrorList {
		spec := &o.Spec
		errs := required(specPath.Child("type"), spec.Type)
		if spec.CredentialsRef != nil {
			errs = append(errs, credentialsRef(*spec.CredentialsRef, o.Namespace, specPath.Child("credentialsRef"))...)
		}
		if msgs := validation.IsValidPortNum(int(spec.Port)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(specPath.Child("port"), spec.Port, strings.Join(msgs, ",")))
		}
		if len(spec.Endpoints) == 0 {
			errs = append(errs, field.Required(specPath.Child("endpoints"), "field is required"))
		}
		for i, ep := range spec.Endpoints {
			p := specPath.Child("endpoints").Index(i)
			errs = append(errs, required(p.Child("nodeName"), ep.NodeName)...)
			for j, addr := range ep.Addresses {
				errs = append(errs, nodeAddress(addr, p.Child("addresses").Index(j))...)
			}
		}
		return errs
	},
	immutable: func(n, o *extensionsv1alpha1.SelfHostedShootExposure) field.ErrorList {
		return immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type)
	},
}

func nodeAddress(addr corev1.NodeAddress, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if addr.Type == "" {
		errs = append(errs, field.Required(path.Child("type"), "field is required"))
	} else if !addressTypes.Has(addr.Type) {
		errs = append(errs, field.NotSupported(path.Child("type"), addr.Type, sets.List(addressTypes)))
	}
	address := path.Child("address")
	switch {
	case addr.Address == "":
		errs = append(errs, field.Required(address, "field is required"))
	case addr.Type == corev1.NodeInternalIP || addr.Type == corev1.NodeExternalIP:
		errs = append(errs, validation.IsValidIPForLegacyField(address, addr.Address, false, nil)...)
	case addr.Type == corev1.NodeHostName || addr.Type == corev1.NodeInternalDNS || addr.Type == corev1.NodeExternalDNS:
		errs = append(errs, dns1123Subdomain(address, addr.Address)...)
	default:
		// Reported besides the type, so that a type supported later does not let any address pass.
		errs = append(errs, field.Invalid(address, addr.Address, fmt.Sprintf("invalid address for unsupported address type %q", addr.Type)))
	}
	return errs
}

// secretKind is the only kind credentials may be: for now extension objects refer to Secrets.
var secretKind = corev1.SchemeGroupVersion.WithKind("Secret")

func credentialsRef(ref corev1.ObjectReference, namespace string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), "must provide an apiVersion"))
	}
	if ref.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), "must provide a kind"))
	}
	// Only references into the object's own namespace are allowed.
	if ref.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "must provide a namespace"))
	} else if ref.Namespace != namespace {
		errs = append(errs, field.Invalid(path.Child("namespace"), ref.Namespace, "must equal metadata.namespace"))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "must provide a name"))
	} else {
		errs = append(errs, dns1123Subdomain(path.Child("name"), ref.Name)...)
	}
	if ref.GroupVersionKind() != secretKind {
		errs = append(errs, field.NotSupported(path, ref.GroupVersionKind(), []string{secretKind.String()}))
	}
	return errs
}

func dns1123Subdomain(path *field.Path, value string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}
