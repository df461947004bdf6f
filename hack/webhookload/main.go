// Command webhookload measures the latency of every webhook the resource-manager server
// serves under sustained load: it starts one envtest control plane, creates the objects each
// webhook reads, runs our server as config/ runs it (the binary of webhooks/resource-manager,
// a process of its own, over TLS), and sends each webhook realistic AdmissionReviews
// (SubjectAccessReviews for the node-agent authorizer) at its Gardener path over loopback: -n
// requests one after the other over one keep-alive connection, then -n requests from -c
// concurrent workers. With -peer, Gardener's own gardener-resource-manager (hack/peers.sh)
// serves the same webhooks beside ours, a process too, with the same configuration file,
// certificate and control plane, and both get the same requests interleaved in rounds, so that
// both are measured in one run under the same noise. It prints requests, p50, p90, p99 and max
// per webhook and mode, and with the peer its p50 and p99 and the ratio ours / Gardener's. Run
// it with `make webhookload`.
package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
	"github.com/gardener-knative/gardener-knative/webhooks"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// warmup requests per webhook are sent before measuring: the first requests set up the TLS
// connection and fill the webhooks' short-lived read caches, as on a server that is running.
const warmup = 20

// defaultTimeout bounds a run: with the defaults it takes about a minute on 2 cores, twice
// that with the peer.
const defaultTimeout = 15 * time.Minute

// settle is how long the servers idle after their start before the first measurement.
const settle = 5 * time.Second

// round is how many requests one side gets before the other's turn: small enough that a burst
// of noise falls on both, large enough that the switch costs nothing measurable.
const round = 50

// options are the command's flags.
type options struct {
	requests    int
	concurrency int
	webhooks    []string
	timeout     time.Duration
	// peer is the gardener-resource-manager binary to measure beside ours ("": none).
	peer string
}

func main() {
	var opts options
	var names string
	flag.IntVar(&opts.requests, "n", 1000, "requests per webhook and mode")
	flag.IntVar(&opts.concurrency, "c", 8, "concurrent workers in the concurrent mode")
	flag.StringVar(&names, "webhooks", "", "comma-separated webhook names to measure (default: all)")
	flag.DurationVar(&opts.timeout, "timeout", defaultTimeout, "bound on the whole run")
	flag.StringVar(&opts.peer, "peer", "", "gardener-resource-manager binary serving the same webhooks beside ours (hack/peers.sh)")
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
	if err := createFixtures(ctx, env.Client); err != nil {
		return fmt.Errorf("creating the objects the webhooks read: %w", err)
	}
	file, err := componentconfig.ResourceManager("")
	if err != nil {
		return err
	}
	cfg := file.ResourceManagerConfiguration
	configure(cfg)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serving.LocalServingCAData) {
		return errors.New("the serving CA holds no certificate")
	}
	dir, err := os.MkdirTemp("", "webhookload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := newLandscape(dir, env, cfg, serving.LocalServingCertDir, roots)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(selected))
	for _, c := range selected {
		names = append(names, c.Name)
	}
	ours, err := l.startOurs(ctx, names)
	if err != nil {
		return err
	}
	defer ours.stop()
	servers := []*server{ours}
	if opts.peer != "" {
		gardener, err := l.startGardener(ctx, opts.peer)
		if err != nil {
			return err
		}
		defer gardener.stop()
		servers = append(servers, gardener)
	}
	// Start-up work (Gardener's informers filling after readiness, our first reads, the
	// build's leftovers on the CPU) must not fall on the first webhook measured.
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	byName := map[string]scenario{}
	for _, s := range scenarios() {
		byName[s.webhook] = s
	}

	fmt.Fprintf(out, "webhookload: %d requests per mode (after %d warm-up), sequential and %d concurrent, loopback TLS, GOMAXPROCS=%d, %s/%s\n",
		opts.requests, warmup, opts.concurrency, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	if len(servers) > 1 {
		fmt.Fprintf(out, "ours (%s) beside Gardener's gardener-resource-manager (%s), each a process of its own with the same configuration file, control plane and certificate, the same requests interleaved in rounds of %d\n", oursPackage, opts.peer, round)
	}
	fmt.Fprintln(out)
	table := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "webhook\tmode\trequests\tp50 ms\tp90 ms\tp99 ms\tmax ms\tGardener p50 ms\tp99 ms\tours/Gardener p50\tp99\t")
	probe := l.client(1)
	for _, c := range selected {
		s, ok := byName[c.Name]
		if !ok {
			return fmt.Errorf("no load scenario for webhook %s", c.Name)
		}
		body, err := s.body()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		sides := servers[:1]
		if len(servers) > 1 {
			serves, err := servers[1].serves(ctx, probe, s.path)
			if err != nil {
				return fmt.Errorf("asking Gardener's server for %s: %w", s.path, err)
			}
			if serves {
				sides = servers
			}
		}
		for _, mode := range []struct {
			name    string
			workers int
		}{{"sequential", 1}, {fmt.Sprintf("concurrent %d", opts.concurrency), opts.concurrency}} {
			var sends []func(context.Context) (time.Duration, error)
			var clients []*http.Client
			for _, srv := range sides {
				httpClient := l.client(mode.workers)
				clients = append(clients, httpClient)
				sends = append(sends, func(ctx context.Context) (time.Duration, error) {
					return post(ctx, httpClient, srv.base+s.path, body, s.check)
				})
			}
			latencies, err := interleaved(ctx, sends, opts.requests, mode.workers)
			for _, c := range clients {
				c.CloseIdleConnections()
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.Name, mode.name, err)
			}
			mine := latencies[0]
			p50, p90, p99, maxLatency := percentile(mine, 0.50), percentile(mine, 0.90), percentile(mine, 0.99), mine[len(mine)-1]
			vs := "-\t-\t-\t-"
			if len(latencies) > 1 {
				g50, g99 := percentile(latencies[1], 0.50), percentile(latencies[1], 0.99)
				vs = fmt.Sprintf("%.2f\t%.2f\t%.2fx\t%.2fx", ms(g50), ms(g99), ms(p50)/ms(g50), ms(p99)/ms(g99))
			}
			fmt.Fprintf(table, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n", c.Name, mode.name, len(mine), ms(p50), ms(p90), ms(p99), ms(maxLatency), vs)
		}
	}
	if err := table.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	for _, srv := range servers {
		fmt.Fprintf(out, "peak RSS of %s's server: %s\n", srv.name, srv.peakRSS())
	}
	return nil
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

// interleaved warms every side up, then sends n requests to each in rounds, the sides taking
// turns (and the first turn alternating), so that whatever else the machine does falls on all
// alike; it returns each side's latencies, sorted.
func interleaved(ctx context.Context, sides []func(context.Context) (time.Duration, error), n, workers int) ([][]time.Duration, error) {
	for i, send := range sides {
		if _, err := drive(ctx, send, warmup, workers); err != nil {
			return nil, fmt.Errorf("warm-up of side %d: %w", i, err)
		}
	}
	latencies := make([][]time.Duration, len(sides))
	for sent, turn := 0, 0; sent < n; sent, turn = sent+round, turn+1 {
		batch := min(round, n-sent)
		for j := range sides {
			i := (turn + j) % len(sides)
			l, err := drive(ctx, sides[i], batch, workers)
			if err != nil {
				return nil, fmt.Errorf("side %d: %w", i, err)
			}
			latencies[i] = append(latencies[i], l...)
		}
	}
	for _, l := range latencies {
		slices.Sort(l)
	}
	return latencies, nil
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
