// Command webhookload measures the latency of every webhook the resource-manager server
// serves under sustained load: it starts one envtest control plane, serves the webhooks
// in-process over TLS as test/integration/webhooks does, creates the objects each webhook
// reads, and sends each webhook realistic AdmissionReviews (SubjectAccessReviews for the
// node-agent authorizer) at its Gardener path over loopback: -n requests one after the
// other over one keep-alive connection, then -n requests from -c concurrent workers. It
// prints requests, p50, p90, p99 and max per webhook and mode, and for the webhooks with
// Gardener figures (issue 7) the ratio to them. Run it with `make webhookload`.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
	"github.com/gardener-knative/gardener-knative/webhooks"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// gardenerFigures are Gardener v1.150's own handlers' p50/p99 in ms, sent sequentially over
// keep-alive on the same machine against envtest (issue 7).
var gardenerFigures = map[string][2]float64{
	highavailabilityconfig.Name: {5.4, 15.0},
	projectedtokenmount.Name:    {2.3, 7.2},
}

// warmup requests per webhook are sent before measuring: the first requests set up the TLS
// connection and fill the webhooks' short-lived read caches, as on a server that is running.
const warmup = 20

// defaultTimeout bounds a run: with the defaults it takes about a minute on 2 cores.
const defaultTimeout = 10 * time.Minute

// options are the command's flags.
type options struct {
	requests    int
	concurrency int
	webhooks    []string
	timeout     time.Duration
}

func main() {
	var opts options
	var names string
	flag.IntVar(&opts.requests, "n", 1000, "requests per webhook and mode")
	flag.IntVar(&opts.concurrency, "c", 8, "concurrent workers in the concurrent mode")
	flag.StringVar(&names, "webhooks", "", "comma-separated webhook names to measure (default: all)")
	flag.DurationVar(&opts.timeout, "timeout", defaultTimeout, "bound on the whole run")
	flag.Parse()
	if names != "" {
		opts.webhooks = strings.Split(names, ",")
	}
	if err := run(opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhookload:", err)
		os.Exit(1)
	}
}

// run measures the selected webhooks and writes the table to out.
func run(opts options, out io.Writer) (err error) {
	if opts.requests < 1 || opts.concurrency < 1 {
		return errors.New("-n and -c must be at least 1")
	}
	selected, err := selectWebhooks(opts.webhooks)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.timeout)
	defer cancel()

	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return err
	}
	defer func() { _ = serving.Cleanup() }()
	env, err := testenv.Start()
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()

	// The server's own clients: client-go's scheme, unthrottled (pkg/webhook.Run).
	restConfig := rest.CopyConfig(env.Config)
	bootstrap.Unthrottled(restConfig)
	reader, err := client.New(restConfig, client.Options{Scheme: kubernetesscheme.Scheme})
	if err != nil {
		return err
	}
	if err := createFixtures(ctx, env.Client); err != nil {
		return fmt.Errorf("creating the objects the webhooks read: %w", err)
	}
	file, err := componentconfig.ResourceManager("")
	if err != nil {
		return err
	}
	cfg := file.ResourceManagerConfiguration
	configure(cfg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps := webhook.Deps{Source: reader, Target: reader, Config: cfg, Clock: clock.RealClock{}, Log: log}
	var webhooks []webhook.Webhook
	for _, c := range selected {
		wh, err := c.Build(deps)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		webhooks = append(webhooks, wh)
	}
	serverCtx, stopServer := context.WithCancel(ctx)
	served, err := webhooktest.StartServer(serverCtx, serving, webhooks, log)
	if err != nil {
		stopServer()
		return err
	}
	defer func() {
		stopServer()
		if serveErr := <-served; serveErr != nil && err == nil {
			err = fmt.Errorf("webhook server: %w", serveErr)
		}
	}()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving.LocalServingCAData) {
		return errors.New("the serving CA holds no certificate")
	}
	base := "https://" + webhooktest.ServingAddr(serving)
	byName := map[string]scenario{}
	for _, s := range scenarios() {
		byName[s.webhook] = s
	}

	fmt.Fprintf(out, "webhookload: %d requests per mode (after %d warm-up), sequential and %d concurrent, loopback TLS, GOMAXPROCS=%d, %s/%s\n\n",
		opts.requests, warmup, opts.concurrency, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	table := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "webhook\tmode\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\tvs Gardener p50/p99\t")
	for _, c := range selected {
		s, ok := byName[c.Name]
		if !ok {
			return fmt.Errorf("no load scenario for webhook %s", c.Name)
		}
		body, err := s.body()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		for _, mode := range []struct {
			name    string
			workers int
		}{{"sequential", 1}, {fmt.Sprintf("concurrent %d", opts.concurrency), opts.concurrency}} {
			// One keep-alive connection per worker, as a kube-apiserver keeps to a webhook.
			httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
				MaxIdleConnsPerHost: mode.workers, MaxConnsPerHost: mode.workers,
			}}
			send := func(ctx context.Context) (time.Duration, error) {
				return post(ctx, httpClient, base+s.path, body, s.check)
			}
			if _, err := drive(ctx, send, warmup, mode.workers); err != nil {
				return fmt.Errorf("%s %s warm-up: %w", c.Name, mode.name, err)
			}
			latencies, err := drive(ctx, send, opts.requests, mode.workers)
			httpClient.CloseIdleConnections()
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.Name, mode.name, err)
			}
			p50, p90, p99, maxLatency := percentile(latencies, 0.50), percentile(latencies, 0.90), percentile(latencies, 0.99), latencies[len(latencies)-1]
			vs := "-"
			if g, ok := gardenerFigures[c.Name]; ok {
				vs = fmt.Sprintf("%.2fx / %.2fx", ms(p50)/g[0], ms(p99)/g[1])
			}
			fmt.Fprintf(table, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", c.Name, mode.name, len(latencies), ms(p50), ms(p90), ms(p99), ms(maxLatency), vs)
		}
	}
	return table.Flush()
}

// selectWebhooks are the webhooks.All named (all when none is).
func selectWebhooks(names []string) ([]webhook.Constructor, error) {
	if len(names) == 0 {
		return webhooks.All, nil
	}
	var selected []webhook.Constructor
	for _, name := range names {
		i := slices.IndexFunc(webhooks.All, func(c webhook.Constructor) bool { return c.Name == name })
		if i < 0 {
			known := make([]string, 0, len(webhooks.All))
			for _, c := range webhooks.All {
				known = append(known, c.Name)
			}
			return nil, fmt.Errorf("unknown webhook %q; known: %s", name, strings.Join(known, ", "))
		}
		selected = append(selected, webhooks.All[i])
	}
	return selected, nil
}

// drive sends n requests from workers goroutines and returns their latencies, sorted.
func drive(ctx context.Context, send func(context.Context) (time.Duration, error), n, workers int) ([]time.Duration, error) {
	latencies := make([]time.Duration, n)
	next := make(chan int)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				d, err := send(ctx)
				if err != nil {
					cancel(err)
					return
				}
				latencies[i] = d
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	slices.Sort(latencies)
	return latencies, nil
}

// post sends one review and checks the answer; the latency covers writing the request and
// reading the whole answer.
func post(ctx context.Context, c *http.Client, url string, body []byte, check func([]byte) error) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, answer)
	}
	return elapsed, check(answer)
}

// percentile is the nearest-rank percentile of sorted latencies.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// configure enables every webhook with the settings the fixtures are made for.
func configure(cfg *rmv1alpha1.ResourceManagerConfiguration) {
	w := &cfg.Webhooks
	w.HighAvailabilityConfig.Enabled = true
	w.KubernetesServiceHost.Enabled = true
	w.KubernetesServiceHost.Host = apiServerHost
	w.ProjectedTokenMount.Enabled = true
	w.PodTopologySpreadConstraints.Enabled = true
	w.SystemComponentsConfig = rmv1alpha1.SystemComponentsConfigWebhookConfig{
		Enabled:         true,
		NodeSelector:    map[string]string{poolLabel: systemPool},
		PodNodeSelector: map[string]string{systemComponentsLabel: "true"},
	}
	w.CRDDeletionProtection.Enabled = true
	w.ExtensionValidation.Enabled = true
	w.NodeAgentAuthorizer.Enabled = true
	w.NodeAgentAuthorizer.MachineNamespace = ptrTo(machineNamespace)
	w.NodeAgentAuthorizer.AuthorizeWithSelectors = ptrTo(true)
	w.PodSchedulerName.Enabled = true
	w.PodSchedulerName.SchedulerName = ptrTo(binPackingScheduler)
	w.SeccompProfile.Enabled = true
	w.PodKubeAPIServerLoadBalancing.Enabled = true
	w.VPAInPlaceUpdates.Enabled = true
}

// scenario is the request one webhook is measured with.
type scenario struct {
	webhook string
	path    string
	body    func() ([]byte, error)
	// check fails an answer other than the one the fixtures lead to: a measurement of an
	// error path would be meaningless.
	check func(answer []byte) error
}

// admissionScenario reviews obj (and oldObj) and wants it allowed, with a patch when
// mutated.
func admissionScenario(name, path string, op admissionv1.Operation, obj, oldObj client.Object, mutated bool) scenario {
	return scenario{
		webhook: name, path: path,
		body: func() ([]byte, error) {
			req, err := webhooktest.NewRequest(op, obj, oldObj)
			if err != nil {
				return nil, err
			}
			return webhooktest.NewAdmissionReview(req)
		},
		check: func(answer []byte) error {
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(answer, &review); err != nil || review.Response == nil {
				return fmt.Errorf("not an AdmissionReview answer (%v): %s", err, answer)
			}
			if !review.Response.Allowed {
				return fmt.Errorf("denied: %+v", review.Response.Result)
			}
			if mutated != (len(review.Response.Patch) > 0) {
				return fmt.Errorf("patch %s, want mutated=%t", review.Response.Patch, mutated)
			}
			return nil
		},
	}
}

// authorizationScenario asks whether a node agent may get a Secret it needs, and wants yes.
func authorizationScenario() scenario {
	return scenario{
		webhook: nodeagentauthorizer.Name, path: nodeagentauthorizer.Path,
		body: func() ([]byte, error) {
			return json.Marshal(authorizationv1.SubjectAccessReview{
				TypeMeta: typeMeta(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview")),
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User:   "gardener.cloud:node-agent:machine:" + machineName,
					Groups: []string{"gardener.cloud:node-agents", "system:authenticated"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: "kube-system", Verb: "get", Version: "v1", Resource: "secrets", Name: oscSecretName,
					},
				},
			})
		},
		check: func(answer []byte) error {
			var review authorizationv1.SubjectAccessReview
			if err := json.Unmarshal(answer, &review); err != nil {
				return fmt.Errorf("not a SubjectAccessReview answer (%v): %s", err, answer)
			}
			if !review.Status.Allowed {
				return fmt.Errorf("not allowed: %+v", review.Status)
			}
			return nil
		},
	}
}

// workerPath is where extension validation answers for Workers.
var workerPath = extensionvalidation.Path(schema.GroupKind{Group: "extensions.gardener.cloud", Kind: "Worker"})

func ptrTo[T any](v T) *T { return &v }
