package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

// pingWatch stands in front of every function (landscape.Options.Front): it tells when each
// sweep has run, and in the SIGKILL scenario kills each function once while it sweeps.
type pingWatch struct {
	land *landscape.Landscape
	kill bool

	mu       sync.Mutex
	rng      *rand.Rand
	expected map[string]bool      // "function/sweep"
	swept    map[string]time.Time // the latest start of a sweep that answered with success
	killed   map[string]bool      // functions killed while sweeping
	killing  map[string]bool
	healed   bool
	kills    atomic.Int64
	// restartErrs are the functions that could not be started again after their kill.
	restartErrs []error
}

func newPingWatch(kill bool, seed int64) *pingWatch {
	return &pingWatch{kill: kill, rng: rand.New(rand.NewSource(seed)), expected: map[string]bool{}, swept: map[string]time.Time{},
		killed: map[string]bool{}, killing: map[string]bool{}}
}

func (p *pingWatch) expect(fn, sweep string) { p.expected[fn+"/"+sweep] = true }

// heal ends the kills.
func (p *pingWatch) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.healed = true
}

// restartFailures are the errors of starting killed functions again.
func (p *pingWatch) restartFailures() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.restartErrs...)
}

func (p *pingWatch) killedMidSweep() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.killed)
}

// front wraps a function's handler.
func (p *pingWatch) front(fn string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Ce-Type") != sourcesv1.PingSourceEventType {
			next.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var data struct {
			Sweep string `json:"sweep"`
		}
		_ = json.Unmarshal(body, &data)
		// A tick's success means a run of its sweep began after the tick and ended (one that
		// arrives while its sweep runs waits for the next run: pkg/function's Sweep).
		key := fn + "/" + data.Sweep
		started := time.Now()

		answer := httptest.NewRecorder()
		if after, ok := p.killAfter(fn); ok {
			done := make(chan struct{})
			go func() { next.ServeHTTP(answer, req); close(done) }()
			select {
			case <-done:
				p.endKill(fn, false) // answered before the kill: the next sweep tries again
			case <-time.After(after):
				p.kills.Add(1)
				if err := p.land.Kill(fn); err != nil {
					p.endKill(fn, false)
					break
				}
				<-done
				p.endKill(fn, answer.Code == http.StatusBadGateway)
				go func() {
					if err := p.land.Restart(context.Background(), fn); err != nil {
						p.mu.Lock()
						p.restartErrs = append(p.restartErrs, fmt.Errorf("restarting %s: %w", fn, err))
						p.mu.Unlock()
					}
				}()
			}
		} else {
			next.ServeHTTP(answer, req)
		}
		if answer.Code >= 200 && answer.Code < 300 {
			p.mu.Lock()
			if started.After(p.swept[key]) {
				p.swept[key] = started
			}
			p.mu.Unlock()
		}
		for k, v := range answer.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(answer.Code)
		_, _ = w.Write(answer.Body.Bytes())
	})
}

// killAfter tells whether to kill fn while it sweeps, and how long after the sweep's start.
func (p *pingWatch) killAfter(fn string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.kill || p.healed || p.killed[fn] || p.killing[fn] {
		return 0, false
	}
	p.killing[fn] = true
	return time.Duration(p.rng.Int63n(int64(10 * time.Millisecond))), true
}

func (p *pingWatch) endKill(fn string, midSweep bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.killing, fn)
	if midSweep {
		p.killed[fn] = true
	}
}

// waitSwept waits until every sweep has run from start to end after since.
func (p *pingWatch) waitSwept(since time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		var missing []string
		for key := range p.expected {
			if !p.swept[key].After(since) {
				missing = append(missing, key)
			}
		}
		p.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			return fmt.Errorf("no sweep since %s of %v", since.Format(time.RFC3339), missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
