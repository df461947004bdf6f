package extensionvalidation

import (
	"fmt"
	"net"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var ipFamilies = sets.New(string(extensionsv1alpha1.IPFamilyIPv4), string(extensionsv1alpha1.IPFamilyIPv6))

var networks = rules[extensionsv1alpha1.Network, *extensionsv1alpha1.Network]{
	kind:       extensionsKind("Network"),
	noun:       "network",
	namespaced: true,
	spec:       func(o *extensionsv1alpha1.Network) any { return &o.Spec },
	valid: func(o *extensionsv1alpha1.Network) field.ErrorList {
		spec := &o.Spec
		errs := required(specPath.Child("type"), spec.Type)
		if familyErrs := validateIPFamilies(spec.IPFamilies, specPath.Child("ipFamilies")); len(familyErrs) > 0 {
			// Without valid families, there is no telling which family the CIDRs must have.
			return append(errs, familyErrs...)
		}

		var cidrs []cidr
		for _, c := range []struct{ name, value string }{{"podCIDR", spec.PodCIDR}, {"serviceCIDR", spec.ServiceCIDR}} {
			path := specPath.Child(c.name)
			if c.value == "" {
				errs = append(errs, field.Required(path, "field is required"))
				continue
			}
			parsed := cidr{path: path, value: c.value}
			var err error
			if _, parsed.net, err = net.ParseCIDR(c.value); err != nil {
				errs = append(errs, field.Invalid(path, c.value, err.Error()))
				continue
			}
			cidrs = append(cidrs, parsed)
		}

		// A dual-stack network's CIDRs may be of either family.
		if len(spec.IPFamilies) < 2 {
			primary := extensionsv1alpha1.IPFamilyIPv4
			if len(spec.IPFamilies) > 0 {
				primary = spec.IPFamilies[0]
			}
			for _, c := range cidrs {
				errs = append(errs, c.ofFamily(primary)...)
			}
		}
		// Gardener does not check the overlap of IPv6-only networks.
		if len(spec.IPFamilies) != 1 || spec.IPFamilies[0] != extensionsv1alpha1.IPFamilyIPv6 {
			for i := range cidrs {
				for _, other := range cidrs[i+1:] {
					if cidrs[i].overlaps(other) {
						errs = append(errs, field.Invalid(other.path, other.value, fmt.Sprintf("must not overlap with %q (%q)", cidrs[i].path.String(), cidrs[i].value)))
					}
				}
			}
		}
		return errs
	},
	immutable: func(n, o *extensionsv1alpha1.Network) field.ErrorList {
		return concat(
			ipFamiliesUpdate(n.Spec.IPFamilies, o.Spec.IPFamilies, specPath.Child("ipFamilies")),
			immutable(specPath.Child("type"), n.Spec.Type, o.Spec.Type),
			immutable(specPath.Child("podCIDR"), n.Spec.PodCIDR, o.Spec.PodCIDR),
			immutable(specPath.Child("serviceCIDR"), n.Spec.ServiceCIDR, o.Spec.ServiceCIDR),
		)
	},
}

// cidr is a parsed CIDR field.
type cidr struct {
	path  *field.Path
	value string
	net   *net.IPNet
}

func (c cidr) ofFamily(family extensionsv1alpha1.IPFamily) field.ErrorList {
	isIPv4 := c.net.IP.To4() != nil
	switch {
	case family == extensionsv1alpha1.IPFamilyIPv4 && !isIPv4:
		return field.ErrorList{field.Invalid(c.path, c.net.IP.String(), "must be a valid IPv4 address")}
	case family == extensionsv1alpha1.IPFamilyIPv6 && isIPv4:
		return field.ErrorList{field.Invalid(c.path, c.net.IP.String(), "must be a valid IPv6 address")}
	}
	return nil
}

func (c cidr) overlaps(other cidr) bool {
	return c.net.Contains(other.net.IP) || other.net.Contains(c.net.IP)
}

func validateIPFamilies(families []extensionsv1alpha1.IPFamily, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, family := range families {
		if !ipFamilies.Has(string(family)) {
			errs = append(errs, field.NotSupported(path.Index(i), family, sets.List(ipFamilies)))
		}
		if seen.Has(string(family)) {
			errs = append(errs, field.Duplicate(path.Index(i), family))
		}
		seen.Insert(string(family))
	}
	return errs
}

// ipFamiliesUpdate allows the migrations between IPv4 and dual-stack IPv4+IPv6 only.
func ipFamiliesUpdate(newFamilies, oldFamilies []extensionsv1alpha1.IPFamily, path *field.Path) field.ErrorList {
	ipv4 := []extensionsv1alpha1.IPFamily{extensionsv1alpha1.IPFamilyIPv4}
	dualStack := []extensionsv1alpha1.IPFamily{extensionsv1alpha1.IPFamilyIPv4, extensionsv1alpha1.IPFamilyIPv6}
	same := func(a, b []extensionsv1alpha1.IPFamily) bool { return apiequality.Semantic.DeepEqual(a, b) }
	if same(oldFamilies, ipv4) && same(newFamilies, dualStack) || same(oldFamilies, dualStack) && same(newFamilies, ipv4) || same(newFamilies, oldFamilies) {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("unsupported IP family update: oldIPFamilies=%v, newIPFamilies=%v", oldFamilies, newFamilies))}
}
