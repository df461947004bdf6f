package extensionvalidation

import (
	"math"
	"net"
	"slices"
	"strings"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var recordTypes = []string{
	string(extensionsv1alpha1.DNSRecordTypeA), string(extensionsv1alpha1.DNSRecordTypeAAAA),
	string(extensionsv1alpha1.DNSRecordTypeCNAME), string(extensionsv1alpha1.DNSRecordTypeTXT),
}

var dnsRecords = rules[extensionsv1alpha1.DNSRecord, *extensionsv1alpha1.DNSRecord]{
	kind:       extensionsKind("DNSRecord"),
	noun:       "dns record",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.DNSRecord) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.DNSRecord) field.ErrorList {
		spec := &o.Spec
		errs := concat(
			required(specPath.Child("type"), spec.Type),
			required(specPath.Child("secretRef", "name"), spec.SecretRef.Name),
		)
		if spec.Region != nil && *spec.Region == "" {
			errs = append(errs, field.Invalid(specPath.Child("region"), *spec.Region, "field cannot be empty if specified"))
		}
		if spec.Zone != nil && *spec.Zone == "" {
			errs = append(errs, field.Invalid(specPath.Child("zone"), *spec.Zone, "field cannot be empty if specified"))
		}

		// A TXT record may start with '_' (DNS challenges such as Let's Encrypt's), others
		// may be a wildcard.
		name := strings.TrimPrefix(spec.Name, "*.")
		if spec.RecordType == extensionsv1alpha1.DNSRecordTypeTXT {
			name = strings.TrimPrefix(spec.Name, "_")
		}
		errs = append(errs, validation.IsFullyQualifiedDomainName(specPath.Child("name"), name)...)

		if !slices.Contains(recordTypes, string(spec.RecordType)) {
			errs = append(errs, field.NotSupported(specPath.Child("recordType"), spec.RecordType, recordTypes))
		}

		values := specPath.Child("values")
		if len(spec.Values) == 0 {
			errs = append(errs, field.Required(values, "field is required"))
		}
		if spec.RecordType == extensionsv1alpha1.DNSRecordTypeCNAME && len(spec.Values) > 1 {
			errs = append(errs, field.Invalid(values, spec.Values, "CNAME records must have a single value"))
		}
		for i, value := range spec.Values {
			switch spec.RecordType {
			case extensionsv1alpha1.DNSRecordTypeA, extensionsv1alpha1.DNSRecordTypeAAAA:
				if net.ParseIP(value) == nil {
					errs = append(errs, field.Invalid(values.Index(i), value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
				}
			case extensionsv1alpha1.DNSRecordTypeCNAME:
				errs = append(errs, validation.IsFullyQualifiedDomainName(values.Index(i), value)...)
			}
		}

		if spec.TTL != nil {
			// RFC 2181, section 8: a TTL is an unsigned 31-bit number.
			for _, msg := range validation.IsInRange(int(*spec.TTL), 0, math.MaxInt32) {
				errs = append(errs, field.Invalid(specPath.Child("ttl"), *spec.TTL, msg))
			}
		}
		return errs
	},
	immutable: func(n, o *extensionsv1alpha1.DNSRecord) field.ErrorList {
		return concat(
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("name"), n.Spec.Name, o.Spec.Name),
			immutable(specPath.Child("recordType"), n.Spec.RecordType, o.Spec.RecordType),
		)
	},
}
