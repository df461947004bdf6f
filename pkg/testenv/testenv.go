// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with the
// Gardener CRDs the functions need. The binaries come from hack/envtest-assets.sh, which
// `make test` and `make run` call; they are found through KUBEBUILDER_ASSETS.
package testenv

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	shipped "github.com/gardener-knative/gardener-knative/pkg/crds"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// GardenerCRDs returns the stand-in CRDs of the Gardener kinds served by gardener-apiserver.
func GardenerCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(crdFiles, "crds")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := crdFiles.ReadFile(path.Join("crds", e.Name()))
		if err != nil {
			return nil, err
		}
		more, err := DecodeCRDs(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		for _, crd := range more {
			declareSelectableFields(crd)
		}
		crds = append(crds, more...)
	}
	return crds, nil
}

// declareSelectableFields gives every selectable field a string property in the schema (the API
// server accepts a selectable field only where the schema declares it), so the stand-in CRD
// files only list the field selectors gardener-apiserver supports and stay permissive otherwise.
func declareSelectableFields(crd *apiextensionsv1.CustomResourceDefinition) {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		for _, field := range v.SelectableFields {
			declare(v.Schema.OpenAPIV3Schema, strings.Split(strings.TrimPrefix(field.JSONPath, "."), "."))
		}
	}
}

// declare makes sure the path below props exists: objects that keep unknown fields, a string at
// the end. What the file declares already is kept.
func declare(props *apiextensionsv1.JSONSchemaProps, parts []string) {
	if props.Properties == nil {
		props.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	child, ok := props.Properties[parts[0]]
	if !ok {
		child = apiextensionsv1.JSONSchemaProps{Type: "string"}
		if len(parts) > 1 {
			child = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		}
	}
	if len(parts) > 1 {
		declare(&child, parts[1:])
	}
	props.Properties[parts[0]] = child
}

// DecodeCRDs decodes the CRDs of a multi-document YAML file, skipping other kinds.
func DecodeCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := decoder.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return crds, nil
			}
			return nil, err
		}
		if crd.Kind == "CustomResourceDefinition" {
			crds = append(crds, crd)
		}
	}
}

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	// Config is the admin's REST config; Client an uncached client over it.
	Config *rest.Config
	Client client.Client

	authorizationLog *authorizationLog
	// gardener is the aggregated gardener-apiserver (Options.GardenerAPIServer), dir its and the
	// front proxy's certificates.
	gardener *gardenerAPIServer
	dir      string
}

// Stop stops the control plane (gardener-apiserver first) and its authorization log.
func (e *Env) Stop() error {
	err := e.gardener.stop()
	err = errors.Join(err, e.Environment.Stop())
	e.authorizationLog.close()
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// Start starts kube-apiserver and etcd with the Gardener CRDs and any extra CRDs installed.
// It fails, never skips, when the binaries are missing: run the tests through `make test`.
func Start(extraCRDs ...*apiextensionsv1.CustomResourceDefinition) (*Env, error) {
	return StartWith(Options{CRDs: extraCRDs})
}

// Options tune the control plane.
type Options struct {
	// CRDs are installed besides the Gardener CRDs.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// APIServerArgs set kube-apiserver flags (name without dashes → value), e.g.
	// "authorization-mode": "RBAC,Webhook".
	APIServerArgs map[string]string
	// Address is the address kube-apiserver serves and advertises (its certificate names it);
	// empty means 127.0.0.1. A shoot of the one-node cluster listens on the host's address, so
	// that pods reach it.
	Address string
	// AuthorizationLog, where AUDIT_LOG_DIR is set, makes kube-apiserver write down every
	// authorization check of a ServiceAccount there (authorizationLog), besides the audit log:
	// a suite whose admission plugins authorize on a request's behalf
	// (OwnerReferencesPermissionEnforcement) sets it, so that hack/leastprivilege sees those
	// checks. It replaces --authorization-mode, so APIServerArgs must not set that.
	AuthorizationLog bool
	// GardenerAPIServer serves Gardener's own API groups (core, seedmanagement, operations,
	// security) through gardener-apiserver v1.150, aggregated beside kube-apiserver, with its
	// registry strategies, defaulting, validation and default admission plugins, instead of
	// stand-in CRDs: a garden as a landscape has it. Its binary comes from GardenerAPIServerEnv.
	GardenerAPIServer bool
}

// AuditLogDirEnv names a directory: when set, every control plane writes kube-apiserver's audit
// log (every request, metadata only) to a file of its own there, from which
// hack/leastprivilege derives what each function's ServiceAccount used.
const AuditLogDirEnv = "AUDIT_LOG_DIR"

// AuditPolicy logs every API request at the Metadata level (who, verb, resource, namespace, the
// outcome), once, when its response is complete.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
`

func auditTo(env *envtest.Environment, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	policy := path.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o644); err != nil {
		return err
	}
	log, err := os.CreateTemp(dir, "audit-*.log")
	if err != nil {
		return err
	}
	_ = log.Close()
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", log.Name())
	args.Set("audit-log-format", "json")
	return nil
}

// startAttempts bounds how often StartWith starts a control plane afresh. Once kube-apiserver
// reports ready, envtest gives it a fixed 5 s to create the default namespace; on a loaded
// machine (a test/cluster shoot shares two CPUs with the whole one-node cluster) that can lapse
// with nothing wrong, and a second start then succeeds.
const startAttempts = 3

// StartWith starts a control plane with the given options.
func StartWith(opts Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}
	crds, err := GardenerCRDs()
	if err != nil {
		return nil, err
	}
	if opts.GardenerAPIServer {
		// gardener-apiserver serves these groups; the kinds Gardener itself serves as CRDs
		// (extensions, druid, machine, operator, resources) stay.
		crds = slices.DeleteFunc(crds, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return servedByGardenerAPIServer(crd.Spec.Group)
		})
	}
	// The CRDs config/ ships are installed as config/ ships them.
	crds = append(crds, shipped.All()...)
	crds = append(crds, opts.CRDs...)
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		env, err := startOnce(opts, crds)
		if err != nil {
			errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
			continue
		}
		if env.Client, err = kube.NewClient(env.Config, scheme.Gardener); err != nil {
			_ = env.Stop()
			return nil, err
		}
		return env, nil
	}
	return nil, fmt.Errorf("starting kube-apiserver and etcd: %w", errors.Join(errs...))
}

// serviceAccountIssuer is every control plane's, as in-cluster clients know their API server.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// startOnce starts one control plane, on a port of its own; what a failed start left running is
// stopped.
func startOnce(opts Options, crds []*apiextensionsv1.CustomResourceDefinition) (*Env, error) {
	env := &envtest.Environment{
		CRDInstallOptions:     envtest.CRDInstallOptions{CRDs: crds},
		ErrorIfCRDPathMissing: true,
	}
	if opts.Address != "" {
		// envtest takes the address only with a port; without one it picks both, on loopback.
		port, err := freePort(opts.Address)
		if err != nil {
			return nil, err
		}
		apiServer := env.ControlPlane.GetAPIServer()
		apiServer.SecureServing.ListenAddr = envtest.ListenAddr{Address: opts.Address, Port: port}
		apiServer.Configure().Set("advertise-address", opts.Address)
	}
	// Service account tokens for the audience "gardener" authenticate, as at a shoot's
	// kube-apiserver, whose --api-audiences gardenlet sets so: the token requestor requests the
	// shoots' access tokens for it.
	env.ControlPlane.GetAPIServer().Configure().Set("service-account-issuer", serviceAccountIssuer)
	env.ControlPlane.GetAPIServer().Configure().Set("api-audiences", serviceAccountIssuer+","+v1beta1constants.GardenerAudience)
	for name, value := range opts.APIServerArgs {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	if _, set := opts.APIServerArgs["authorization-mode"]; set && opts.AuthorizationLog {
		return nil, errors.New("an authorization log replaces --authorization-mode: set one of them")
	}
	started := &Env{Environment: env}
	if dir := os.Getenv(AuditLogDirEnv); dir != "" {
		if err := auditTo(env, dir); err != nil {
			return nil, err
		}
		if opts.AuthorizationLog {
			log, err := recordAuthorization(env, dir)
			if err != nil {
				return nil, err
			}
			started.authorizationLog = log
		}
	}
	if opts.GardenerAPIServer {
		dir, err := os.MkdirTemp("", "testenv-gardener-")
		if err != nil {
			return nil, err
		}
		started.dir = dir
		if err := aggregation(env, dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = started.Stop()
		return nil, err
	}
	started.Config = cfg
	if opts.GardenerAPIServer {
		if started.gardener, err = startGardenerAPIServer(context.Background(), env, started.dir); err != nil {
			_ = started.Stop()
			return nil, fmt.Errorf("gardener-apiserver: %w", err)
		}
	}
	return started, nil
}

// CountingClient returns an uncached client whose requests are counted by the returned counter.
// With a user name, the client impersonates that user (e.g. a function's ServiceAccount).
func (e *Env) CountingClient(impersonate ...string) (client.Client, *kube.RequestCounter, error) {
	cfg := rest.CopyConfig(e.Config)
	if len(impersonate) > 0 {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate[0]}
	}
	return countingClient(cfg)
}

// FunctionUserAgent is the user agent of a function's requests as functiontest serves it: the
// audit log tells them apart from a test's own requests as the same user (probes that the
// function may not do something).
const FunctionUserAgent = "gardener-knative-function"

// FunctionClient is CountingClient for a function served as user (its ServiceAccount), with the
// FunctionUserAgent; configure may change its rest.Config (e.g. put APIFaults in its transport).
func (e *Env) FunctionClient(user string, configure ...func(*rest.Config)) (client.Client, *kube.RequestCounter, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.UserAgent = FunctionUserAgent
	// The function's own client-side rate limit, not client-go's 5 requests a second.
	kube.WithDefaultRate(cfg)
	for _, c := range configure {
		c(cfg)
	}
	return countingClient(cfg)
}

// As is an uncached client of the control plane acting as user in groups (a kubelet, say:
// "system:node:<name>", "system:nodes"), which the API server then records as the requester.
func (e *Env) As(user string, groups ...string) (client.Client, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return kube.NewClient(cfg, scheme.Gardener)
}

func countingClient(cfg *rest.Config) (client.Client, *kube.RequestCounter, error) {
	counter := kube.NewRequestCounter(prometheus.NewRegistry())
	counter.Instrument(cfg)
	c, err := kube.NewClient(cfg, scheme.Gardener)
	return c, counter, err
}

// Main is a test package's TestMain: it starts one control plane with the Gardener CRDs into
// *env for all the package's tests, runs them, stops it and exits.
func Main(m *testing.M, env **Env) { MainWith(m, env, Options{}) }

// MainWith is Main with a control plane started with opts.
func MainWith(m *testing.M, env **Env, opts Options) {
	var err error
	if *env, err = StartWith(opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = (*env).Stop()
	os.Exit(code)
}

// Namespace creates a namespace of its own for a test (named garden-<random>, as project
// namespaces are) and returns its name.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garden-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// parallelWorkers bounds Parallel's concurrency: enough to hide the API server's round trip,
// few enough not to starve the control plane on a small machine.
const parallelWorkers = 16

// Parallel calls do(0), …, do(n-1) on at most 16 goroutines and returns the first error; after
// an error it hands out no further calls (those under way finish). Tests and benchmarks create
// their thousands of objects with it: one by one, each waiting for its round trip to the API
// server, that takes minutes against envtest.
func Parallel(n int, do func(i int) error) error {
	var (
		next     atomic.Int64
		failed   atomic.Bool
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range min(parallelWorkers, n) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					once.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// freePort is a port free on address now.
func freePort(address string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return "", fmt.Errorf("finding a free port on %s: %w", address, err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// FreeLoopbackPorts are n distinct ports free on loopback now, for processes a harness starts.
func FreeLoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
