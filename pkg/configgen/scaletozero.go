package configgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// ScaleToZeroDir is the folder, under config/, of the variant in which every Knative
	// Service may scale to zero.
	ScaleToZeroDir = "scale-to-zero"
	// minScale is Knative's lower bound of replicas.
	minScale = "autoscaling.knative.dev/min-scale"
	// maxWebhookTimeoutSeconds is the longest an admission webhook may take (admissionregistration/v1).
	maxWebhookTimeoutSeconds = 30
)

// ScaleToZeroFolders are the folders of config/ that have a scale-to-zero variant, each in the same
// folder under ScaleToZeroDir: config/ itself (the seed's), config/shoot/ and config/shoot-opt-in/
// (the shoots', which the enrolment renders), kept apart so that `ko apply -f
// config/scale-to-zero/` never registers a shoot's webhooks in the seed.
var ScaleToZeroFolders = []string{".", "shoot", "shoot-opt-in"}

// ScaleToZero derives the scale-to-zero variant of the manifests in one folder of configDir:
// every Knative Service that keeps replicas (min-scale) gets min-scale "0", and every webhook
// registration gets the longest timeout the API allows, so that a cold start through Knative has
// a chance to finish inside an admission request. Only changed objects are written; applied after
// config/ they override it (`ko apply -f config/ -f config/scale-to-zero/`).
func ScaleToZero(configDir, folder string) ([]File, error) {
	var files []File
	paths, err := filepath.Glob(filepath.Join(configDir, folder, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	for _, path := range paths {
		docs, err := scaleToZeroDocuments(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(docs) == 0 {
			continue
		}
		rel, err := filepath.Rel(configDir, path)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		buf.WriteString(Header + "\n")
		fmt.Fprintf(&buf, "# From config/%s: the scale-to-zero variant (min-scale 0, webhook timeouts %ds).\n", filepath.ToSlash(rel), maxWebhookTimeoutSeconds)
		buf.WriteString("# See docs/webhooks.md for the risk; regenerate with `go run ./hack/genconfig`.\n")
		for _, doc := range docs {
			buf.WriteString("---\n")
			buf.Write(doc)
		}
		files = append(files, File{Name: filepath.Base(path), Content: buf.Bytes()})
	}
	return files, nil
}

// scaleToZeroDocuments returns the changed documents of one file.
func scaleToZeroDocuments(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte(Header)) {
		return nil, nil // generated files hold no Service or webhook registration
	}
	var out [][]byte
	err = eachObject(data, func(obj map[string]any) error {
		if !scaleObjectToZero(obj) {
			return nil
		}
		y, err := yaml.Marshal(obj)
		out = append(out, y)
		return err
	})
	return out, err
}

// eachObject calls f with every object of a YAML stream, decoded; documents of comments only
// are skipped.
func eachObject(data []byte, f func(obj map[string]any) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			return err
		}
		if obj == nil {
			continue // comments only
		}
		if err := f(obj); err != nil {
			return err
		}
	}
}

// scaleObjectToZero changes obj in place and reports whether it changed.
func scaleObjectToZero(obj map[string]any) bool {
	switch obj["kind"] {
	case "Service":
		if obj["apiVersion"] != "serving.knative.dev/v1" {
			return false
		}
		annotations := nestedMap(obj, "spec", "template", "metadata", "annotations")
		if annotations == nil || annotations[minScale] == nil || annotations[minScale] == "0" {
			return false
		}
		annotations[minScale] = "0"
		return true
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		webhooks, _ := obj["webhooks"].([]any)
		for _, w := range webhooks {
			if m, ok := w.(map[string]any); ok {
				m["timeoutSeconds"] = maxWebhookTimeoutSeconds
			}
		}
		return len(webhooks) > 0
	}
	return false
}

func nestedMap(obj map[string]any, path ...string) map[string]any {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}
