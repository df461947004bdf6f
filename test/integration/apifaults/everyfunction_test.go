package apifaults_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// probeTenant is the tenant the per-seed functions are served with: this control plane,
// enrolled in itself.
const probeTenant tenant.Name = "shoot--probe--faults"

// Every function of the registry, while its kube-apiserver is unreachable: an event or a sweep
// tick whose work met the fault is answered 503, so that the Broker or PingSource retries; a 200
// is right only for what needed no request (an event its predicates filter out, a sweep that is
// off) or for a sweep that counted its failed keys for the next tick. Once the kube-apiserver is
// back, each of them is answered 200: the 503 was the fault's.
func TestEveryFunctionAsksForARetryWhileUnreachable(t *testing.T) {
	for name, value := range switchedOn {
		t.Setenv(name, value)
	}
	require.NoError(t, testenv.Enroll(context.Background(), env.Client, probeTenant, env))
	for _, fn := range functions.All {
		t.Run(fn.Name, func(t *testing.T) {
			faults := testenv.NewAPIFaults(1)
			options := []functiontest.Option{functiontest.AsFunction(), faultOptions(),
				functiontest.WithRESTConfig(func(c *rest.Config) { c.WrapTransport = faults.WrapTransport })}
			switch fn.DeploymentMode() {
			case function.PerSeed:
				options = append(options, functiontest.WithTenants())
			case function.SingleTarget:
				// The Target is this control plane too, without the fault: what the function
				// reads there works, what it reads on its Source does not.
				options = append(options, functiontest.WithTarget(env))
			}
			h := functiontest.New(t, env, fn, options...)
			config, err := function.LoadConfig(fn, function.ComponentConfigs{})
			require.NoError(t, err)

			type probe struct {
				what  string
				event func() (int, string)
				// mustRetry: a sweep that lists on the Source (or discovers its tenants there)
				// cannot work at all.
				mustRetry bool
			}
			var probes []probe
			for _, w := range fn.Watches {
				obj := probeObject(w)
				cluster := w.Cluster
				probes = append(probes, probe{what: "event of " + w.Kind.Kind + " (" + string(clusterOf(cluster)) + ")", event: func() (int, string) {
					if clusterOf(cluster) == function.Target {
						tn := tenant.Name("")
						if fn.DeploymentMode() == function.PerSeed {
							tn = probeTenant
						}
						return h.Post(h.TargetEvent("add", obj, tn))
					}
					return h.Post(h.Event("add", obj))
				}})
			}
			for _, s := range fn.Sweeps {
				require.False(t, s.Off != nil && s.Off(config), "sweep %s is off: switch it on in switchedOn", s.Name)
				probes = append(probes, probe{what: "tick of sweep " + s.Name, event: func() (int, string) { return h.Post(h.Ping(s.Name)) },
					mustRetry: fn.DeploymentMode() == function.PerSeed || listsSource(s)})
			}

			faults.Set(testenv.Unreachable)
			var retried []probe
			for _, p := range probes {
				before, failedKeys := faults.Injected(testenv.Unreachable), keyFailures(h)
				code, body := p.event()
				met := faults.Injected(testenv.Unreachable) > before
				switch {
				case p.mustRetry && code != http.StatusServiceUnavailable:
					t.Errorf("%s: %d, but its LISTs cannot work: %s", p.what, code, body)
				case code == http.StatusServiceUnavailable:
					retried = append(retried, p)
				case code == http.StatusOK:
					assert.True(t, !met || keyFailures(h) > failedKeys,
						"%s: acknowledged although its requests met the fault, and no key failure counted: %s", p.what, body)
				default:
					t.Errorf("%s: %d, neither a retry (503) nor an acknowledgement: %s", p.what, code, body)
				}
			}
			assert.Positive(t, faults.Injected(testenv.Unreachable), "no event or tick of %s sent a request", fn.Name)

			faults.Set(testenv.Healthy)
			for _, p := range retried {
				// As the sender retries a 503: envtest's kube-apiserver answers a function's first
				// LIST of a kind 429 with Retry-After: 1 (API Priority and Fairness, before it
				// knows the kind's size), which a 2 s sweep budget may not outlast.
				var code int
				var body string
				for range healedAttempts {
					if code, body = p.event(); code == http.StatusOK {
						break
					}
				}
				assert.Equal(t, http.StatusOK, code, "%s, healed, after %d attempts: %s", p.what, healedAttempts, body)
			}
			t.Logf("%s: %d of %d events and ticks answered 503 during the outage (%d requests refused), 200 once healed",
				fn.Name, len(retried), len(probes), faults.Injected(testenv.Unreachable))
		})
	}
}

// healedAttempts bounds the sends of an event or tick once the kube-apiserver is back.
const healedAttempts = 3

// switchedOn are the settings that switch on what Gardener runs only when configured, so that
// every sweep of every function is probed, and the seed the controllerinstallation function
// installs for.
var switchedOn = map[string]string{
	"SEED_NAME":                               "probe",
	"EVENT_TTL_NON_SHOOT_EVENTS":              "1h",
	"GARBAGE_COLLECTOR_ENABLED":               "true",
	"CSR_APPROVER_ENABLED":                    "true",
	"TOKEN_INVALIDATOR_ENABLED":               "true",
	"TOKEN_REQUESTOR_ENABLED":                 "true",
	"NODE_CRITICAL_COMPONENTS_ENABLED":        "true",
	"NODE_AGENT_RECONCILIATION_DELAY_ENABLED": "true",
	"NETWORK_POLICY_ENABLED":                  "true",
}

func listsSource(s function.Sweep) bool {
	for _, l := range append([]function.List{s.Primary}, s.Related...) {
		if clusterOf(l.Cluster) == function.Source {
			return true
		}
	}
	return false
}

func clusterOf(c function.Cluster) function.Cluster {
	if c == "" {
		return function.Source
	}
	return c
}

// probeObject is an object of the watch's kind, in the probe tenant's namespace if namespaced,
// with the labels the watch's equality selector asks for, so that fewer predicates filter it.
func probeObject(w function.Watch) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(w.Kind.GroupVersionKind)
	obj.SetName("probe")
	if w.Kind.Namespaced {
		obj.SetNamespace(string(probeTenant))
	}
	if selector, err := labels.ConvertSelectorToLabelsMap(w.LabelSelector); err == nil && len(selector) > 0 {
		obj.SetLabels(selector)
	}
	return obj
}

// keyFailures are the function's reconciles of swept keys that failed, for the next tick.
func keyFailures(h *functiontest.Harness) float64 {
	return h.Metric("gardener_knative_sweep_key_failures_total", nil)
}
