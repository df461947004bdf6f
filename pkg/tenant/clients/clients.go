// Package clients reaches the clusters of a seed's tenants: for each shoot control-plane
// namespace of the seed, an uncached client of the shoot's kube-apiserver, built from the access
// Secrets gardenlet keeps in that namespace. The webhooks (one server per seed for every shoot)
// and the functions (one deployment per seed, and the multi-tenant event source) share it, so
// that there is one way a tenant is resolved, cached and isolated.
package clients

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// clusterGVK is extensions.gardener.cloud's Cluster, named after the shoot's control-plane
// namespace; gardenlet annotates it with the name of the namespace's generic token kubeconfig.
var clusterGVK = schema.GroupVersionKind{Group: "extensions.gardener.cloud", Version: "v1alpha1", Kind: "Cluster"}

// UnknownTenantError says that a tenant has no usable access in the seed: no Cluster, no
// generic token kubeconfig, no access Secret or token, or the server may not read them. It is
// permanent until an operator or gardenlet fixes the seed, unlike API errors.
type UnknownTenantError struct {
	Tenant tenant.Name
	Reason string
	// NotEnrolled: the tenant's Cluster exists but lacks tenant.EnrolledLabel, so another
	// resource manager (gardenlet's) serves it. Not a failure: it is left alone.
	NotEnrolled bool
}

func (e *UnknownTenantError) Error() string {
	return fmt.Sprintf("unknown tenant %q: %s", e.Tenant, e.Reason)
}

// IsUnknownTenant tells whether err (or an error it wraps) is an UnknownTenantError.
func IsUnknownTenant(err error) bool {
	var u *UnknownTenantError
	return errors.As(err, &u)
}

// IsNotEnrolled tells whether err (or an error it wraps) says that a tenant is not enrolled.
func IsNotEnrolled(err error) bool {
	var u *UnknownTenantError
	return errors.As(err, &u) && u.NotEnrolled
}

// Options configure Clients.
type Options struct {
	// Seed reads the tenants' Clusters and Secrets in the seed.
	Seed client.Reader
	// Scheme of the tenants' clients.
	Scheme *runtime.Scheme
	// AccessSecret is the Secret in the tenant's namespace whose "token" authenticates at the
	// tenant's kube-apiserver (tenant.DefaultAccessSecret when empty).
	AccessSecret string
	// Size bounds how many tenants' clients are kept (least recently used go first); TTL bounds
	// how long one is reused before its Secrets are read again (e.g. a rotated token or CA).
	Size int
	TTL  time.Duration
	// UnknownTTL bounds how long an unknown tenant stays unknown without asking the seed again.
	UnknownTTL time.Duration
	// SharedMapper, when set, maps the kinds of the API groups compiled into Scheme for every
	// tenant (e.g. the seed client's REST mapper); other groups each tenant discovers itself.
	SharedMapper meta.RESTMapper
	// ConfigureREST adapts every tenant's REST config before its client is built (request
	// counting, the client-side rate limit).
	ConfigureREST func(*rest.Config)
	// IdleConnTimeout, when set, closes a tenant's connections once they carried no request for
	// that long, and gives each tenant a transport of its own (client-go keeps one per CA for the
	// process's lifetime, with its connections idle for 90 s). A process that reaches every shoot
	// only in its sweeps and events then holds the connections of the tenants it worked on lately,
	// not one per shoot (docs/configuration.md, TENANT_IDLE_CONN_TIMEOUT).
	IdleConnTimeout time.Duration
	Log             *slog.Logger
}

// Clients builds, per tenant, an uncached client of the tenant's kube-apiserver from its
// access Secrets in the seed, and keeps it in the bounded, expiring read cache (pkg/cache);
// concurrent first requests of a tenant share one build. Unknown tenants
// are remembered for a shorter time than clients.
type Clients struct {
	opts    Options
	builtin *builtinMapper
	cache   *cache.Cache[cachedTenant]
}

// cachedTenant is a cache entry: a client, the REST configuration it was built from and the
// tenant's settings, or why the tenant is unknown.
type cachedTenant struct {
	client   client.Client
	config   *rest.Config
	settings *tenant.Settings
	unknown  error
}

// New returns an empty cache of tenant clients.
func New(opts Options) (*Clients, error) {
	if opts.AccessSecret == "" {
		opts.AccessSecret = tenant.DefaultAccessSecret
	}
	if opts.Size <= 0 {
		opts.Size = 1000
	}
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.UnknownTTL <= 0 {
		opts.UnknownTTL = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	clients, err := cache.New(cache.Options[cachedTenant]{
		TTL: opts.TTL, Size: opts.Size, LoadTimeout: buildTimeout,
		TTLOf: func(v cachedTenant) time.Duration {
			if v.unknown != nil {
				return opts.UnknownTTL
			}
			return opts.TTL
		},
	})
	if err != nil {
		return nil, err
	}
	c := &Clients{opts: opts, cache: clients}
	if opts.SharedMapper != nil {
		c.builtin = newBuiltinMapper(opts.SharedMapper, opts.Scheme)
	}
	return c, nil
}

// buildTimeout bounds one build: it runs detached from the first caller (others may wait for
// it), and reads three objects.
const buildTimeout = 10 * time.Second

// Client returns the tenant's client, building it on first use. An *UnknownTenantError says the
// seed holds no usable access for the tenant; other errors are transient.
func (c *Clients) Client(ctx context.Context, t tenant.Name) (client.Client, error) {
	entry, err := c.get(ctx, t)
	return entry.client, err
}

// Config returns the REST configuration of the tenant's client (e.g. for the cluster source,
// which builds its own dynamic client), with the same errors as Client.
func (c *Clients) Config(ctx context.Context, t tenant.Name) (*rest.Config, error) {
	entry, err := c.get(ctx, t)
	if err != nil {
		return nil, err
	}
	return rest.CopyConfig(entry.config), nil
}

func (c *Clients) get(ctx context.Context, t tenant.Name) (cachedTenant, error) {
	// The cache scopes its keys by the context's tenant: each tenant has one entry.
	entry, err := c.cache.Get(tenant.With(ctx, t), "client", func(ctx context.Context) (cachedTenant, error) {
		built, err := c.build(ctx, t)
		switch {
		case err == nil:
			c.opts.Log.Info("tenant client built", "tenant", string(t))
			return built, nil
		case IsNotEnrolled(err):
			c.opts.Log.Debug("tenant not enrolled: left to another resource manager", "tenant", string(t))
			return cachedTenant{unknown: err}, nil
		case IsUnknownTenant(err):
			c.opts.Log.Warn("unknown tenant", "tenant", string(t), "error", err)
			return cachedTenant{unknown: err}, nil
		}
		return cachedTenant{}, err
	})
	if err != nil {
		return cachedTenant{}, err
	}
	if entry.unknown != nil {
		return cachedTenant{}, entry.unknown
	}
	return entry, nil
}

// Settings returns the tenant's settings, derived from its Cluster when its client was built
// (shared with every request of the tenant: never changed), with the same errors as Client.
func (c *Clients) Settings(ctx context.Context, t tenant.Name) (*tenant.Settings, error) {
	entry, err := c.get(ctx, t)
	return entry.settings, err
}

// Forget drops the tenant's client, e.g. after its token was refused: the next request reads
// the Secrets again.
func (c *Clients) Forget(t tenant.Name) { c.cache.Forget(t) }

// Len is the number of tenants cached (known and unknown).
func (c *Clients) Len() int { return c.cache.Len() }

// build reads the tenant's Cluster (the name of its generic token kubeconfig, and the Shoot and
// Seed its settings come from), that kubeconfig (server and CA) and the access Secret (token)
// from the seed.
func (c *Clients) build(ctx context.Context, t tenant.Name) (cachedTenant, error) {
	unknown := func(format string, args ...any) error {
		return &UnknownTenantError{Tenant: t, Reason: fmt.Sprintf(format, args...)}
	}
	// Not found and forbidden (the server is not granted the namespace's Secrets, see
	// docs/deployment.md) both mean the tenant is not served here.
	read := func(what string, key client.ObjectKey, obj client.Object) error {
		err := c.opts.Seed.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return unknown("%s: %v", what, err)
		}
		if err != nil {
			return fmt.Errorf("tenant %q: reading %s: %w", t, what, err)
		}
		return nil
	}
	ns := string(t)
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	if err := read("Cluster", client.ObjectKey{Name: ns}, cluster); err != nil {
		return cachedTenant{}, err
	}
	// The gate comes before anything of the tenant's is read: an unenrolled tenant's Secrets are
	// never read here.
	if cluster.GetLabels()[tenant.EnrolledLabel] != "true" {
		return cachedTenant{}, &UnknownTenantError{Tenant: t, NotEnrolled: true,
			Reason: fmt.Sprintf("not enrolled: its Cluster has no label %s=true", tenant.EnrolledLabel)}
	}
	settings, err := SettingsOfCluster(cluster)
	if err != nil {
		return cachedTenant{}, unknown("Cluster %s: %v", ns, err)
	}
	kubeconfigName := cluster.GetAnnotations()[v1beta1constants.AnnotationKeyGenericTokenKubeconfigSecretName]
	if kubeconfigName == "" {
		return cachedTenant{}, unknown("Cluster %s has no annotation %s", ns, v1beta1constants.AnnotationKeyGenericTokenKubeconfigSecretName)
	}
	kubeconfig := &corev1.Secret{}
	if err := read("generic token kubeconfig Secret", client.ObjectKey{Namespace: ns, Name: kubeconfigName}, kubeconfig); err != nil {
		return cachedTenant{}, err
	}
	access := &corev1.Secret{}
	if err := read("access Secret", client.ObjectKey{Namespace: ns, Name: c.opts.AccessSecret}, access); err != nil {
		return cachedTenant{}, err
	}
	token := strings.TrimSpace(string(access.Data["token"]))
	if token == "" {
		return cachedTenant{}, unknown("access Secret %s/%s has no token (yet)", ns, c.opts.AccessSecret)
	}
	cfg, err := RESTConfig(t, kubeconfig.Data["kubeconfig"], token)
	if err != nil {
		return cachedTenant{}, unknown("generic token kubeconfig Secret %s/%s: %v", ns, kubeconfigName, err)
	}
	if c.opts.ConfigureREST != nil {
		c.opts.ConfigureREST(cfg)
	}
	if c.opts.IdleConnTimeout > 0 {
		if err := closeIdleConnectionsAfter(cfg, c.opts.IdleConnTimeout); err != nil {
			return cachedTenant{}, unknown("generic token kubeconfig Secret %s/%s: %v", ns, kubeconfigName, err)
		}
	}
	cl, err := c.newClient(cfg)
	if err != nil {
		// It reaches no server yet: what fails is the configuration (e.g. a CA that does not
		// parse), which only the seed's Secrets can fix.
		return cachedTenant{}, unknown("generic token kubeconfig Secret %s/%s: %v", ns, kubeconfigName, err)
	}
	return cachedTenant{client: cl, config: cfg, settings: settings}, nil
}

// closeIdleConnectionsAfter gives cfg a transport of its own, built as client-go builds the one
// it would share (its TLS settings, timeouts and HTTP/2 health checks), whose connections close
// after idle without a request.
func closeIdleConnectionsAfter(cfg *rest.Config, idle time.Duration) error {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     idle,
		MaxIdleConnsPerHost: 25,
		DisableCompression:  cfg.DisableCompression,
	})
	// A REST config with a transport may not carry TLS settings: they are the transport's now.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return nil
}

// SettingsOfCluster derives a tenant's settings from its Cluster (read whole: unstructured, so
// that no process needs the extensions API group in its scheme). The Cluster must hold the
// Shoot, as gardenlet always writes it; what cannot be decoded makes the tenant unknown.
func SettingsOfCluster(cluster *unstructured.Unstructured) (*tenant.Settings, error) {
	rawShoot, ok, _ := unstructured.NestedMap(cluster.Object, "spec", "shoot")
	if !ok || len(rawShoot) == 0 {
		return nil, errors.New("holds no shoot (spec.shoot)")
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rawShoot, shoot); err != nil {
		return nil, fmt.Errorf("decoding spec.shoot: %w", err)
	}
	var seed *gardencorev1beta1.Seed
	if rawSeed, ok, _ := unstructured.NestedMap(cluster.Object, "spec", "seed"); ok {
		seed = &gardencorev1beta1.Seed{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rawSeed, seed); err != nil {
			return nil, fmt.Errorf("decoding spec.seed: %w", err)
		}
	}
	settings := tenant.SettingsOf(shoot, seed)
	return &settings, nil
}

// newClient is a tenant's uncached client; with a shared mapper, it discovers only the API
// groups the shared one does not map.
func (c *Clients) newClient(cfg *rest.Config) (client.Client, error) {
	if c.builtin == nil {
		return client.New(cfg, client.Options{Scheme: c.opts.Scheme})
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	own, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	mapper := meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{c.builtin, own}}
	return client.New(cfg, client.Options{Scheme: c.opts.Scheme, HTTPClient: httpClient, Mapper: mapper})
}

// RESTConfig is the REST config of a tenant's kube-apiserver: server and CA of the
// current context of Gardener's generic token kubeconfig, authenticated with token (the
// kubeconfig names a token file that exists only in the shoot's own pods).
//
// The generic kubeconfig addresses the kube-apiserver by its Service name relative to the shoot
// namespace (https://kube-apiserver); from the server's namespace that name is qualified with
// the tenant's namespace, and the TLS server name stays the original one, which the
// kube-apiserver's certificate carries.
func RESTConfig(t tenant.Name, kubeconfig []byte, token string) (*rest.Config, error) {
	if len(kubeconfig) == 0 {
		return nil, errors.New("no key kubeconfig")
	}
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig: %w", err)
	}
	kctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig has no current context %q", kc.CurrentContext)
	}
	cluster, ok := kc.Clusters[kctx.Cluster]
	if !ok || cluster.Server == "" {
		return nil, fmt.Errorf("kubeconfig has no server for cluster %q", kctx.Cluster)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return nil, errors.New("kubeconfig has no certificate-authority-data: a tenant's kube-apiserver is only reached with a verified certificate")
	}
	server, err := url.Parse(cluster.Server)
	if err != nil || server.Scheme != "https" || server.Host == "" {
		return nil, fmt.Errorf("kubeconfig server %q is no https URL", cluster.Server)
	}
	serverName := cluster.TLSServerName
	if host := server.Hostname(); !strings.Contains(host, ".") && net.ParseIP(host) == nil && host != "localhost" {
		if serverName == "" {
			serverName = host
		}
		qualified := host + "." + string(t) + ".svc"
		if port := server.Port(); port != "" {
			qualified = net.JoinHostPort(qualified, port)
		}
		server.Host = qualified
	}
	return &rest.Config{
		Host:            server.String(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CertificateAuthorityData, ServerName: serverName},
		// A Proxy keeps client-go from sharing the transport through its process-wide TLS
		// cache, which is never pruned: with one transport per tenant, an evicted tenant's
		// connections go with its client instead of piling up for every CA ever seen.
		Proxy: http.ProxyFromEnvironment,
	}, nil
}

// builtinMapper is a REST mapper shared by all tenants for the API groups compiled into the
// scheme (Kubernetes' own, which every cluster serves alike): a tenant's client then discovers
// its own API only for other groups (e.g. its custom resources), which saves most of a
// tenant's memory. It answers "no match" for every other group.
type builtinMapper struct {
	meta.RESTMapper
	groups map[string]bool
}

func newBuiltinMapper(shared meta.RESTMapper, scheme *runtime.Scheme) *builtinMapper {
	groups := map[string]bool{}
	for gvk := range scheme.AllKnownTypes() {
		groups[gvk.Group] = true
	}
	return &builtinMapper{RESTMapper: shared, groups: groups}
}

func (m *builtinMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if !m.groups[r.Group] {
		return schema.GroupVersionKind{}, &meta.NoResourceMatchError{PartialResource: r}
	}
	return m.RESTMapper.KindFor(r)
}

func (m *builtinMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	if !m.groups[r.Group] {
		return nil, &meta.NoResourceMatchError{PartialResource: r}
	}
	return m.RESTMapper.KindsFor(r)
}

func (m *builtinMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	if !m.groups[r.Group] {
		return schema.GroupVersionResource{}, &meta.NoResourceMatchError{PartialResource: r}
	}
	return m.RESTMapper.ResourceFor(r)
}

func (m *builtinMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	if !m.groups[r.Group] {
		return nil, &meta.NoResourceMatchError{PartialResource: r}
	}
	return m.RESTMapper.ResourcesFor(r)
}

func (m *builtinMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if !m.groups[gk.Group] {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func (m *builtinMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	if !m.groups[gk.Group] {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMappings(gk, versions...)
}
