package configgen

import (
	"bytes"
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// VersionLabel carries a release's version on every object it ships (and on the pods of its
// Knative Services), as Knative labels its own releases.
const VersionLabel = "app.kubernetes.io/version"

// ReleaseParts are the folders of config/ a release ships, each as one file: every part
// (gardener-knative-<part>.yaml, what `kubectl apply -f` installs where the part belongs), each
// part's scale-to-zero variant, the seed's opt-in registrations, and what is applied to the garden
// (config/garden/: the parts' identities there and the runtime part's registrations, and its
// scale-to-zero variant). The shoots' registrations
// are not among them: the enrolment command renders them from its own copy (config/config.go).
var ReleaseParts = func() []ReleasePart {
	var parts []ReleasePart
	for _, p := range function.AllParts {
		parts = append(parts,
			ReleasePart{Folder: string(p), File: "gardener-knative-" + string(p) + ".yaml"},
			ReleasePart{Folder: ScaleToZeroDir + "/" + string(p), File: "gardener-knative-" + string(p) + "-scale-to-zero.yaml"})
	}
	return append(parts,
		ReleasePart{Folder: "seed-opt-in", File: "gardener-knative-seed-opt-in.yaml"},
		ReleasePart{Folder: GardenDir, File: "gardener-knative-garden.yaml"},
		ReleasePart{Folder: ScaleToZeroDir + "/" + GardenDir, File: "gardener-knative-garden-scale-to-zero.yaml"})
}()

// ReleasePart is one folder of config/ a release resolves into one file.
type ReleasePart struct{ Folder, File string }

var releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// ValidReleaseVersion reports whether version is a semantic version with a leading v (v1.2.3,
// v1.2.3-rc.1): it becomes a label value and an image tag, which allow no more.
func ValidReleaseVersion(version string) error {
	if !releaseVersion.MatchString(version) {
		return fmt.Errorf("release version %q is not of the form v1.2.3 or v1.2.3-rc.1", version)
	}
	return nil
}

// Release labels every object of a resolved manifest (ko resolve's output: images by digest)
// with version, and the pod template of every Knative Service too, and writes it back as one
// YAML stream under a header saying what it is.
func Release(resolved []byte, version, part string) ([]byte, error) {
	if err := ValidReleaseVersion(version); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# gardener-knative %s: %s, resolved (images by digest). Install with kubectl apply -f.\n", version, part)
	objects := 0
	err := eachObject(resolved, func(obj map[string]any) error {
		setLabel(obj, version, "metadata")
		if obj["apiVersion"] == "serving.knative.dev/v1" && obj["kind"] == "Service" {
			setLabel(obj, version, "spec", "template", "metadata")
		}
		out, err := yaml.Marshal(obj)
		buf.WriteString("---\n")
		buf.Write(out)
		objects++
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", part, err)
	}
	if objects == 0 {
		return nil, fmt.Errorf("%s: the resolved manifest holds no object", part)
	}
	return buf.Bytes(), nil
}

// setLabel sets the version label in the metadata at path, creating what is missing.
func setLabel(obj map[string]any, version string, path ...string) {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	labels, ok := cur["labels"].(map[string]any)
	if !ok {
		labels = map[string]any{}
		cur["labels"] = labels
	}
	labels[VersionLabel] = version
}
