package configgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

const (
	// ScaleToZeroDir is the folder, under config/, of the variant in which every Knative
	// Service may scale to zero.
	ScaleToZeroDir = "scale-to-zero"
	// minScale is Knative's lower bound of replicas.
	minScale = "autoscaling.knative.dev/min-scale"
	// maxWebhookTimeoutSeconds is the longest an admission webhook may take (admissionregistration/v1).
	maxWebhookTimeoutSeconds = 30
	// directSuffix names the plain Service that reaches a Knative Service's own TLS port.
	directSuffix = "-tls"
)

// ourNamespace says whether namespace is where a part of config/ runs its Services.
func ourNamespace(namespace string) bool {
	_, ok := function.PartIn(namespace)
	return ok
}

// ownTLS is what a Knative Service adds to serve its own certificate (config/seed/grm-webhooks.yaml):
// the variant drops it, since no registration reaches it there.
var ownTLS = map[string]bool{"TLS_PORT": true, "TLS_CERT_FILE": true, "TLS_KEY_FILE": true}

const ownTLSVolume = "tls"

// ScaleToZeroFolders are the folders of config/ that have a scale-to-zero variant, each in the same
// folder under ScaleToZeroDir: every part's (config/runtime/, config/seed/), and config/shoot/ and
// config/shoot-opt-in/ (the shoots', which the enrolment renders) and config/garden/ (the runtime
// part's registrations in the garden), kept apart so that a part's variant is applied where the
// part is, and never registers a shoot's webhooks in the seed.
var ScaleToZeroFolders = append(partFolders(), "shoot", "shoot-opt-in", GardenDir)

func partFolders() []string {
	var folders []string
	for _, p := range function.AllParts {
		folders = append(folders, string(p))
	}
	return folders
}

// ScaleToZero derives the scale-to-zero variant of the manifests in one folder of configDir:
// every Knative Service that keeps replicas (min-scale) gets min-scale "0" and serves no TLS of
// its own, and every webhook registration gets the longest timeout the API allows, so that a cold
// start through Knative has a chance to finish inside an admission request. A registration that
// reaches a Service's own TLS port (clientConfig.service <name>-tls) goes through Knative's
// ingress instead (clientConfig.url), which wakes it, and trusts the ingress's CA
// (webhookcertificates.IngressCA, the variant's input). A shoot's registration that reaches it by
// url (https://<name>-tls.<namespace>.svc/...) gets the Knative Service's cluster-local url,
// whose CA the enrolment and shootcabundle give it. Only changed objects are written; applied
// after their part they override it (`ko apply -f config/seed/ -f config/scale-to-zero/seed/`).
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
		dropOwnTLS(nestedMap(obj, "spec", "template", "spec"))
		return true
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		webhooks, _ := obj["webhooks"].([]any)
		metadata := nestedMap(obj, "metadata")
		annotations, _ := metadata["annotations"].(map[string]any)
		_, injected := annotations[webhookcertificates.AnnotationInjectFromSecret]
		throughIngress := ""
		for _, w := range webhooks {
			if m, ok := w.(map[string]any); ok {
				m["timeoutSeconds"] = maxWebhookTimeoutSeconds
				clientConfig := nestedMap(m, "clientConfig")
				if namespace := viaIngress(clientConfig); namespace != "" {
					throughIngress = namespace
				}
				// A url's CA comes from the annotation, when it has one (the garden's
				// registrations; the shoots' get theirs from the enrolment and shootcabundle).
				if namespace := urlViaIngress(clientConfig); namespace != "" && injected {
					throughIngress = namespace
				}
			}
		}
		if throughIngress != "" {
			if annotations == nil {
				annotations = map[string]any{}
				metadata["annotations"] = annotations
			}
			annotations[webhookcertificates.AnnotationInjectFromSecret] = throughIngress + "/" + webhookcertificates.IngressCA
		}
		return len(webhooks) > 0
	}
	return false
}

// viaIngress turns a client configuration that names one of our Services' own TLS ports into the
// URL of the Knative Service behind it, and returns the Service's namespace when it did.
func viaIngress(clientConfig map[string]any) string {
	service := nestedMap(clientConfig, "service")
	name, _ := service["name"].(string)
	namespace, _ := service["namespace"].(string)
	if service == nil || !ourNamespace(namespace) || !strings.HasSuffix(name, directSuffix) {
		return ""
	}
	path, _ := service["path"].(string)
	delete(clientConfig, "service")
	clientConfig["url"] = "https://" + strings.TrimSuffix(name, directSuffix) + "." + namespace + ".svc.cluster.local" + path
	return namespace
}

// urlViaIngress turns a url at one of our Services' own TLS ports into the cluster-local url of
// the Knative Service behind it, and returns the Service's namespace when it did.
func urlViaIngress(clientConfig map[string]any) string {
	raw, _ := clientConfig["url"].(string)
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	service, namespace, _ := strings.Cut(strings.TrimSuffix(u.Hostname(), ".svc"), ".")
	name, ok := strings.CutSuffix(service, directSuffix)
	if !ok || !ourNamespace(namespace) || !strings.HasSuffix(u.Hostname(), ".svc") {
		return ""
	}
	u.Host = name + "." + namespace + ".svc.cluster.local"
	clientConfig["url"] = u.String()
	return namespace
}

// dropOwnTLS removes ownTLS from a Knative Service's pod spec.
func dropOwnTLS(podSpec map[string]any) {
	containers, _ := podSpec["containers"].([]any)
	for _, c := range containers {
		if container, ok := c.(map[string]any); ok {
			filter(container, "env", func(e map[string]any) bool { return ownTLS[fmt.Sprint(e["name"])] })
			filter(container, "volumeMounts", func(m map[string]any) bool { return m["name"] == ownTLSVolume })
		}
	}
	filter(podSpec, "volumes", func(v map[string]any) bool { return v["name"] == ownTLSVolume })
}

// filter removes from the list obj[key] the maps that drop matches, and the key once the list is
// empty.
func filter(obj map[string]any, key string, drop func(map[string]any) bool) {
	items, ok := obj[key].([]any)
	if !ok {
		return
	}
	kept := slices.DeleteFunc(items, func(item any) bool {
		m, ok := item.(map[string]any)
		return ok && drop(m)
	})
	if len(kept) == 0 {
		delete(obj, key)
	} else {
		obj[key] = kept
	}
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
