package webhook

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/serve"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// The flood's tenants and how long it lasts.
const (
	floodTenant, quietTenant = tenant.Name("shoot--a"), tenant.Name("shoot--b")
	floodFor                 = 6 * time.Second
	// floodPause is how long a flooding connection waits once refused: at most some 1,300 new
	// connections a second, whose ports wait a minute in TIME_WAIT.
	floodPause = 50 * time.Millisecond
	// floodServerEnv makes TestFloodServerProcess serve (the standalone measurement).
	floodServerEnv = "GARDENER_KNATIVE_FLOOD_SERVER"
	// floodTenantsEnv is how many tenants flood at once in the standalone measurement.
	floodTenantsEnv = "GARDENER_KNATIVE_FLOOD_TENANTS"
	// floodMeasureEnv runs the flood against a server in a process of its own, whose peak RSS
	// it reports: GARDENER_KNATIVE_FLOOD_MEASURE=1 go test ./pkg/webhook/ -run TestFlood -v.
	floodMeasureEnv = "GARDENER_KNATIVE_FLOOD_MEASURE"
	// floodCgroupEnv puts the measured server process into a memory cgroup (v1) of this many
	// MiB, the pods' limit (128): GARDENER_KNATIVE_FLOOD_MEASURE=1 GARDENER_KNATIVE_FLOOD_CGROUP=128
	// (root, a writable /sys/fs/cgroup/memory). The kernel then kills the server where the pod
	// would be OOM-killed, and the quiet tenant's requests fail.
	floodCgroupEnv = "GARDENER_KNATIVE_FLOOD_CGROUP"
)

// floodServer serves a validating webhook that decodes both objects of an AdmissionReview (what
// a real webhook costs per byte) at /<tenant>/validate for both tenants and /validate for the
// seed, each through one fairShare, with the webhook server's timeouts, as Serve does.
func floodServer(ctx context.Context, limits Fairness, ready func(net.Addr)) error {
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	metrics := newServerMetrics(reg)
	wh := Admission("validate", "/validate", admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		var obj, old corev1.ConfigMap
		if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		return admission.Allowed("")
	}), log)
	handler := metrics.instrument(wh.Name, withTimeout(10*time.Second, wh.Handler), log)
	share := newFairShare(limits, metrics)
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { share.Serve(w, r, "", handler) })
	mux.HandleFunc("/{tenant}/validate", func(w http.ResponseWriter, r *http.Request) {
		share.Serve(w, r, tenant.Name(r.PathValue("tenant")), handler)
	})
	if os.Getenv(floodServerEnv) != "" {
		mux.Handle("/peak", peakMemory(ctx))
	}
	return serve.Run(ctx, limits.serveOptions(serve.Options{Addr: "127.0.0.1:0", ShutdownTimeout: time.Second, Ready: ready}), mux, reg, log)
}

// peakMemory samples the live heap and all of the runtime's memory and serves their peaks.
func peakMemory(ctx context.Context) http.Handler {
	var mu sync.Mutex
	peaks := map[string]uint64{}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
	go func() {
		for ctx.Err() == nil {
			metrics.Read(samples)
			mu.Lock()
			for _, s := range samples {
				peaks[s.Name] = max(peaks[s.Name], s.Value.Uint64())
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(peaks)
	})
}

// floodReview is an UPDATE AdmissionReview of a ConfigMap whose object and old object each hold
// dataBytes of data.
func floodReview(t testing.TB, dataBytes int) []byte {
	cm := func(v string) runtime.RawExtension {
		raw, err := json.Marshal(&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "kube-system"},
			Data:       map[string]string{"blob": strings.Repeat(v, dataBytes)},
		})
		require.NoError(t, err)
		return runtime.RawExtension{Raw: raw}
	}
	out, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("0c6f6a6e-3f0e-4c57-9f0a-5b7a7d1c2e3f"), Operation: admissionv1.Update,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Name:     "big", Namespace: "kube-system",
			Object: cm("a"), OldObject: cm("b"),
		},
	})
	require.NoError(t, err)
	return out
}

// Serves the flood's webhook in a process of its own (the standalone measurement): prints its
// address, serves until its stdin closes.
func TestFloodServerProcess(t *testing.T) {
	if os.Getenv(floodServerEnv) == "" {
		t.Skip("the server of the standalone flood measurement (" + floodMeasureEnv + ")")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	var limits Fairness
	if os.Getenv(floodServerEnv) == "unbounded" {
		limits = Fairness{TenantMaxInFlight: 1 << 20, TenantMaxBytesInFlight: 1 << 40, MaxBytesInFlight: 1 << 40}
	}
	require.NoError(t, floodServer(ctx, limits, func(a net.Addr) { fmt.Println("serving", a.String()) }))
}

// One tenant's kube-apiserver floods the server: many connections sending ~3 MiB AdmissionReviews
// at once, half of them with bodies of unknown length, and slow bodies that trickle in. Another
// tenant, sending one request after another (a large one now and then), is served throughout,
// and the flooding one gets 429s.
func TestFloodFromOneTenantLeavesOthersServed(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of several seconds")
	}
	base, peakRSS := startFloodServer(t)
	large, small := floodReview(t, 1536<<10), floodReview(t, 2<<10)
	t.Logf("reviews: large %d bytes, small %d bytes", len(large), len(small))

	ctx, cancel := context.WithTimeout(context.Background(), floodFor)
	defer cancel()
	var a floodCounts
	var wg sync.WaitGroup
	// The standalone measurement may flood from more tenants at once, to fill MAX_BYTES_IN_FLIGHT.
	flooders := []tenant.Name{floodTenant}
	if n, _ := strconv.Atoi(os.Getenv(floodTenantsEnv)); n > 1 {
		for i := 2; i <= n; i++ {
			flooders = append(flooders, tenant.Name(fmt.Sprintf("%s%d", floodTenant, i)))
		}
	}
	for _, flooder := range flooders {
		flood(ctx, &wg, &a, strings.TrimPrefix(base, "http://"), flooder, large)
	}

	// The quiet tenant: one request after another, every tenth a large one. Like a
	// kube-apiserver (client-go's rest client), it sends a request shed with Retry-After again
	// after that long, within its 10 s.
	var latencies []time.Duration
	var quietShed int
	client := &http.Client{Transport: &http.Transport{}}
	time.Sleep(200 * time.Millisecond) // the flood is on
	for i := 0; ctx.Err() == nil; i++ {
		body := small
		if i%10 == 9 {
			body = large
		}
		start := time.Now()
		within, stop := context.WithTimeout(context.Background(), 10*time.Second)
		code, err := floodPost(within, client, base+"/"+string(quietTenant)+"/validate", bytes.NewReader(body))
		for ; err == nil && code == http.StatusTooManyRequests; code, err = floodPost(within, client, base+"/"+string(quietTenant)+"/validate", bytes.NewReader(body)) {
			quietShed++
			time.Sleep(retryAfterSeconds * time.Second)
		}
		stop()
		latencies = append(latencies, time.Since(start))
		require.NoError(t, err, "request %d of the quiet tenant", i)
		require.Equal(t, http.StatusOK, code, "request %d of the quiet tenant", i)
	}
	cancel()
	wg.Wait()
	client.CloseIdleConnections()

	slices.Sort(latencies)
	p := func(q float64) time.Duration {
		return latencies[int(q*float64(len(latencies)-1))].Round(time.Microsecond)
	}
	attempts := a.ok.Load() + a.refused.Load() + a.failed.Load()
	t.Logf("quiet tenant: %d requests, all 200 (%d times shed and sent again); p50 %s, p99 %s, max %s", len(latencies), quietShed, p(0.5), p(0.99), latencies[len(latencies)-1].Round(time.Microsecond))
	t.Logf("flooding tenant: %d requests answered, %d served, %d refused with 429 (%.1f%%), %d failed otherwise (first: %v); %d admitted slow bodies ended by the read timeout",
		attempts, a.ok.Load(), a.refused.Load(), 100*float64(a.refused.Load())/float64(max(attempts, 1)), a.failed.Load(), a.firstFailure.Load(), a.slowCut.Load())
	if peakRSS != nil {
		var peaks map[string]uint64
		resp, err := http.Get(base + "/peak")
		require.NoError(t, err)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&peaks))
		_ = resp.Body.Close()
		t.Logf("server process (%d flooding tenants): peak RSS %.1f MiB, peak live heap %.1f MiB, peak Go memory %.1f MiB (GOMEMLIMIT %s, GOGC %s; the pods' limit is 128Mi)",
			len(flooders), float64(peakRSS())/(1<<20), float64(peaks["/gc/heap/live:bytes"])/(1<<20), float64(peaks["/memory/classes/total:bytes"])/(1<<20),
			cmp.Or(os.Getenv("GOMEMLIMIT"), "100MiB"), cmp.Or(os.Getenv("GOGC"), strconv.Itoa(GCPercent)))
	}
	assert.NotEmpty(t, latencies)
	assert.Less(t, latencies[len(latencies)-1], 10*time.Second, "every request of the quiet tenant answered within 10 s")
	assert.Positive(t, a.refused.Load(), "the flooding tenant is shed")
	if len(flooders) == 1 {
		assert.Zero(t, quietShed, "one tenant's flood leaves the others room: none of theirs is shed")
	}
}

// floodCounts are the flooding tenants' outcomes.
type floodCounts struct {
	ok, refused, failed, slowCut atomic.Int64
	firstFailure                 atomic.Value
}

func (a *floodCounts) fail(why string) {
	a.failed.Add(1)
	a.firstFailure.CompareAndSwap(nil, why)
}

// flood starts tenant key's flood of the server at addr until ctx ends: 48 connections sending
// the large review, half of them with no length known (sent chunked), and 16 slow bodies that
// announce it and trickle in 1 KiB every 100 ms.
func flood(ctx context.Context, wg *sync.WaitGroup, a *floodCounts, addr string, key tenant.Name, large []byte) {
	for i := range 48 {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{}, Timeout: 15 * time.Second}
			defer client.CloseIdleConnections()
			for ctx.Err() == nil {
				var body io.Reader = bytes.NewReader(large)
				if i%2 == 1 {
					body = io.MultiReader(body) // no length known: sent chunked
				}
				code, err := floodPost(ctx, client, "http://"+addr+"/"+string(key)+"/validate", body)
				switch {
				case ctx.Err() != nil:
				case err != nil:
					a.fail(err.Error())
				case code == http.StatusOK:
					a.ok.Add(1)
				case code == http.StatusTooManyRequests:
					a.refused.Add(1)
				default:
					a.fail(http.StatusText(code))
				}
				if code != http.StatusOK {
					// Not the Retry-After second a kube-apiserver waits, but a pause: a shed
					// request's connection closes (its body unread), and a worker without one
					// would use up the loopback's ports in seconds.
					time.Sleep(floodPause)
				}
			}
		})
	}
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				code := slowBody(ctx, addr, "/"+string(key)+"/validate", len(large))
				switch {
				case ctx.Err() != nil:
				case code == http.StatusTooManyRequests:
					a.refused.Add(1)
					time.Sleep(floodPause)
				case code < 0:
					a.fail("dial")
					time.Sleep(floodPause)
				default:
					// Admitted, its body never complete: the read timeout ended it (the webhook
					// answers an errored review, or the connection closes).
					a.slowCut.Add(1)
				}
			}
		})
	}
}

// startFloodServer serves the flood's webhook in this process, or with floodMeasureEnv in a
// process of its own whose peak RSS peakRSS reads.
func startFloodServer(t *testing.T) (base string, peakRSS func() int64) {
	t.Helper()
	mode := os.Getenv(floodMeasureEnv)
	if mode == "" {
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- floodServer(ctx, Fairness{}, func(a net.Addr) { addr <- a }) }()
		t.Cleanup(func() { cancel(); <-done })
		return "http://" + (<-addr).String(), nil
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodServerProcess$", "-test.v")
	// The pods' settings (config/seed/grm-webhooks.yaml, GCPercent) unless the environment sets others.
	cmd.Env = append(os.Environ(), floodServerEnv+"="+mode, "GOMEMLIMIT="+cmp.Or(os.Getenv("GOMEMLIMIT"), "100MiB"), "GOGC="+cmp.Or(os.Getenv("GOGC"), strconv.Itoa(GCPercent)))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if mib, _ := strconv.Atoi(os.Getenv(floodCgroupEnv)); mib > 0 {
		memoryCgroup(t, cmd.Process.Pid, int64(mib)<<20)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "serving "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return "http://" + addr, func() int64 { return vmHWM(t, cmd.Process.Pid) }
		}
	}
	t.Fatal("the server process did not start")
	return "", nil
}

// memoryCgroup moves process pid into a memory cgroup (v1) of its own limited to limit bytes,
// and reports at the end what the cgroup's memory peaked at, how often the limit was hit and
// whether the kernel killed anything in it.
func memoryCgroup(t *testing.T, pid int, limit int64) {
	t.Helper()
	dir := fmt.Sprintf("/sys/fs/cgroup/memory/gardener-knative-flood-%d", pid)
	require.NoError(t, os.Mkdir(dir, 0o755), "a memory cgroup (v1, as root)")
	write := func(file, value string) {
		require.NoError(t, os.WriteFile(dir+"/"+file, []byte(value), 0o644), file)
	}
	write("memory.limit_in_bytes", strconv.FormatInt(limit, 10))
	write("cgroup.procs", strconv.Itoa(pid))
	t.Cleanup(func() {
		read := func(file string) string {
			data, err := os.ReadFile(dir + "/" + file)
			if err != nil {
				return err.Error()
			}
			return strings.TrimSpace(string(data))
		}
		maxUsage, _ := strconv.ParseInt(read("memory.max_usage_in_bytes"), 10, 64)
		t.Logf("memory cgroup of %d MiB: peak usage %.1f MiB, limit hit %s times; oom_control: %s",
			limit>>20, float64(maxUsage)/(1<<20), read("memory.failcnt"), strings.ReplaceAll(read("memory.oom_control"), "\n", ", "))
		assert.NotContains(t, read("memory.oom_control"), "oom_kill 1", "the server was killed for memory")
		// The process back into the root group, so that the emptied one can go.
		assert.NoError(t, os.WriteFile("/sys/fs/cgroup/memory/cgroup.procs", []byte(strconv.Itoa(pid)), 0o644))
		assert.NoError(t, os.Remove(dir))
	})
}

// vmHWM is a process's peak RSS.
func vmHWM(t *testing.T, pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func floodPost(ctx context.Context, client *http.Client, url string, body io.Reader) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// slowBody sends a request announcing n bytes of body and trickles them in; it returns the
// status the server answers, or 0 when the server closed the connection without one (cut by its
// read timeout) or ctx ended.
func slowBody(ctx context.Context, addr, path string, n int) int {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return -1
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, n); err != nil {
		return 0
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		_ = resp.Body.Close()
		answered <- resp.StatusCode
	}()
	chunk := bytes.Repeat([]byte(" "), 1<<10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-answered:
			return code
		case <-tick.C:
			_, _ = conn.Write(chunk) // a cut connection answers with its close
		}
	}
}
