package function

import "fmt"

// Part is a part of config/: what an operator applies to one kind of cluster of a Gardener
// landscape, where Gardener runs the component a function stands in for (docs/deployment.md,
// "Parts").
type Part string

const (
	// Runtime is the runtime cluster, beside the garden: gardener-controller-manager's and
	// gardener-operator's controllers.
	Runtime Part = "runtime"
	// Seed is every seed: gardenlet's part and the resource manager's controllers and webhooks,
	// one deployment per seed for all its shoots.
	Seed Part = "seed"
)

// AllParts are every part, in the order config/ and the docs present them.
var AllParts = []Part{Runtime, Seed}

// Namespace is where the part's functions, event plumbing and webhook servers live. The two
// differ, so that a runtime cluster that is also a seed (Gardener's common setup) holds both
// parts side by side, each with its own Broker.
func (p Part) Namespace() string {
	if p == Seed {
		return SeedNamespace
	}
	return SeedNamespace + "-" + string(p)
}

// SeedNamespace is the seed part's namespace, the one the shoots' registrations address
// (https://grm-webhooks-tls.gardener-knative.svc/...), so it keeps the project's name.
const SeedNamespace = "gardener-knative"

// Validate says whether p is a part.
func (p Part) Validate() error {
	for _, known := range AllParts {
		if p == known {
			return nil
		}
	}
	return fmt.Errorf("part %q is none of %v", p, AllParts)
}

// OwnNamespace, as a key of NamespacedRBAC, is the namespace of the part the function is
// deployed with (Part.Namespace): for a function of several parts, each its own.
const OwnNamespace = "(own)"

// NamespaceOf resolves a key of NamespacedRBAC for a deployment of part p.
func NamespaceOf(key string, p Part) string {
	if key == OwnNamespace {
		return p.Namespace()
	}
	return key
}

// NamespaceEnv tells a deployed function its part's namespace (Part.Namespace), for a function
// that works in its own.
const NamespaceEnv = "GARDENER_KNATIVE_NAMESPACE"

// PartIn is the part whose namespace is namespace; false for a namespace of no part.
func PartIn(namespace string) (Part, bool) {
	for _, p := range AllParts {
		if p.Namespace() == namespace {
			return p, true
		}
	}
	return "", false
}

// HomePart is the part a single deployment of the function belongs to where only one is meant (its
// tests, the local landscape): its first part, or the seed's for a declaration of none (a test's).
func (f *Function) HomePart() Part {
	if len(f.Parts) == 0 {
		return Seed
	}
	return f.Parts[0]
}
