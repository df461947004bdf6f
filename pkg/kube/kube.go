// Package kube builds the uncached API clients the functions and webhooks use, and counts the
// requests they make: API requests are what a stateless control loop costs.
package kube

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClientConfig says how to reach the API server.
type ClientConfig struct {
	// Kubeconfig is a kubeconfig file; empty means the in-cluster configuration.
	Kubeconfig string `envconfig:"KUBECONFIG"`
	// KubeconfigData is a kubeconfig itself, read instead of a file where the process was given
	// one that way (an environment variable from a Secret); set by the process, never from
	// KUBECONFIG's environment.
	KubeconfigData []byte `ignored:"true"`
	// QPS and Burst bound the client's request rate. client-go's defaults (5/10) would
	// throttle a sweep over thousands of objects.
	QPS   float32 `envconfig:"KUBE_API_QPS" default:"50"`
	Burst int     `envconfig:"KUBE_API_BURST" default:"100"`
}

// DefaultQPS and DefaultBurst are ClientConfig's defaults (its envconfig tags, which must be
// literals, say the same: TestDefaultRateIsTheConfigs), for clients that stand for a function's
// own, such as functiontest's.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// WithDefaultRate sets cfg's client-side rate limit to the functions' default.
func WithDefaultRate(cfg *rest.Config) { cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst }

// RESTConfig loads the REST configuration from KubeconfigData, else from the kubeconfig file,
// else from the cluster.
func (c ClientConfig) RESTConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if len(c.KubeconfigData) > 0 {
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(c.KubeconfigData); err != nil {
			return nil, fmt.Errorf("loading kube client configuration from a kubeconfig's content: %w", err)
		}
	} else if cfg, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, fmt.Errorf("loading kube client configuration (KUBECONFIG=%q): %w", c.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = c.QPS, c.Burst
	return cfg, nil
}

// NewClient returns an uncached client for the scheme. Every read goes to the API server: there
// is no informer cache to warm up or to keep in memory between events.
func NewClient(cfg *rest.Config, scheme *runtime.Scheme) (client.Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating API client: %w", err)
	}
	return c, nil
}

// OnUnauthorized makes cfg's client call refused whenever the API server answers 401
// Unauthorized: it no longer takes the credentials the client was built with.
func OnUnauthorized(cfg *rest.Config, refused func()) {
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusUnauthorized {
				refused()
			}
			return resp, err
		})
	})
}
