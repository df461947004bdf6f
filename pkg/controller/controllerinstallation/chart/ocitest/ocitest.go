// Package ocitest serves a real OCI registry in-process (go-containerregistry's registry over
// httptest), optionally behind basic auth, and builds and pushes Helm charts to it with Helm's
// own registry client: for the tests, the benchmark and the local landscape, never a mock.
package ocitest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"sigs.k8s.io/yaml"
)

// Registry is an OCI registry served on a loopback or private address (go-containerregistry and
// Helm speak plain HTTP to those).
type Registry struct {
	// Host is host:port, the registry part of references.
	Host               string
	Username, Password string
	server             *httptest.Server
	requests, blobs    atomic.Int64
}

// Start serves a registry on a free loopback port; with a username, every request must
// authenticate with it.
func Start(username, password string) *Registry {
	r, err := StartAt("127.0.0.1:0", username, password)
	if err != nil {
		panic(fmt.Sprintf("ocitest: %v", err)) // as httptest.NewServer does when it cannot listen
	}
	return r
}

// StartAt serves a registry at a loopback or private address (host:port).
func StartAt(address, username, password string) (*Registry, error) {
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	return Serve(listener, username, password), nil
}

// Serve serves a registry on listener (a loopback one), e.g. one reserved before the references
// naming it were built.
func Serve(listener net.Listener, username, password string) *Registry {
	r := &Registry{Username: username, Password: password}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.blobs.Add(1)
		}
		if username != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != username || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		reg.ServeHTTP(w, req)
	}))
	_ = r.server.Listener.Close()
	r.server.Listener = listener
	r.server.Start()
	r.Host = strings.TrimPrefix(r.server.URL, "http://")
	return r
}

// Close stops serving.
func (r *Registry) Close() { r.server.Close() }

// Requests is how many HTTP requests the registry answered.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// BlobDownloads is how many blobs (chart layers, configs) the registry sent.
func (r *Registry) BlobDownloads() int64 { return r.blobs.Load() }

// DockerConfigJSON is a .dockerconfigjson with the registry's credentials.
func (r *Registry) DockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
	raw, _ := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{"auth": auth}}})
	return raw
}

// Push pushes the chart archive to <host>/charts/<name>:<version> and returns the reference
// and the manifest digest.
func (r *Registry) Push(archive []byte, name, version string) (ref, digest string, err error) {
	opts := []helmregistry.ClientOption{helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard)}
	if r.Username != "" {
		opts = append(opts, helmregistry.ClientOptBasicAuth(r.Username, r.Password))
	}
	client, err := helmregistry.NewClient(opts...)
	if err != nil {
		return "", "", err
	}
	ref = fmt.Sprintf("%s/charts/%s:%s", r.Host, name, version)
	result, err := client.Push(archive, ref)
	if err != nil {
		return "", "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return ref, result.Manifest.Digest, nil
}

// Archive builds a chart .tgz with the given templates (file name → content) and default values.
func Archive(name, version string, templates map[string]string, values map[string]any) ([]byte, error) {
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"},
		Values:   values,
	}
	// Save writes values.yaml from the chart's raw files.
	raw, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	c.Raw = []*chart.File{{Name: chartutil.ValuesfileName, Data: raw}}
	for file, content := range templates {
		c.Templates = append(c.Templates, &chart.File{Name: "templates/" + file, Data: []byte(content)})
	}
	dir, err := os.MkdirTemp("", "ocitest-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Clean(path))
}

// ConfigMapChart is a chart with one ConfigMap named <release>-config that shows the values
// gardenlet injects (the seed's name and the Gardener version) and the chart's own "greeting".
func ConfigMapChart(name, version string) ([]byte, error) {
	return Archive(name, version, map[string]string{"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  seed: {{ .Values.gardener.seed.name | quote }}
  gardenerVersion: {{ .Values.gardener.version | quote }}
  chartVersion: {{ .Chart.Version | quote }}
`}, map[string]any{"greeting": "hello"})
}
