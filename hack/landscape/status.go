package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/term"
)

// status is the live line of `make run`: what each function did so far, read from its own
// /metrics (the same figures an operator's Prometheus scrapes), never from its logs.
type status struct {
	out      io.Writer
	terminal bool
	client   *http.Client
	printed  string
	// header are the lines above the live block: where everything is. On a terminal every
	// redraw shows them first, as `watch` shows its command.
	header []string
	// lines add lines read from the API servers (the registration chain, GRM's sample).
	lines []func() string
}

// headline adds a line to the header; off a terminal it is printed at once.
func (s *status) headline(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.header = append(s.header, line)
	if !s.terminal {
		fmt.Fprintln(s.out, line)
	}
}

func newStatus(out *os.File) *status {
	return &status{out: out, terminal: term.IsTerminal(int(out.Fd())), client: &http.Client{Timeout: time.Second}}
}

// figures are one function's counters.
type figures struct {
	// failed are the events the function could not handle (answered for a retry, or with a
	// bug); terminal, those it judged never to succeed and acknowledged (e.g. a Seed whose
	// samples lack a registration): expected outcomes, shown apart.
	events, failed, terminal, sweeps, writes float64
}

func (f figures) String() string {
	return fmt.Sprintf("%.0f events (%.0f failed, %.0f terminal), %.0f sweeps, %.0f writes", f.events, f.failed, f.terminal, f.sweeps, f.writes)
}

// scrape reads one function's /metrics.
func (s *status) scrape(url string) (figures, error) {
	var f figures
	resp, err := s.client.Get(url + "/metrics")
	if err != nil {
		return f, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return f, err
	}
	for _, m := range families["gardener_knative_events_total"].GetMetric() {
		f.events += m.GetCounter().GetValue()
		switch label(m, "outcome") {
		case "done", "coalesced", "off":
		case "terminal":
			f.terminal += m.GetCounter().GetValue()
		default:
			f.failed += m.GetCounter().GetValue()
		}
	}
	for _, m := range families["gardener_knative_sweep_duration_seconds"].GetMetric() {
		f.sweeps += float64(m.GetHistogram().GetSampleCount())
	}
	for _, m := range families["gardener_knative_api_requests_total"].GetMetric() {
		switch label(m, "verb") {
		case "create", "update", "patch", "delete", "deletecollection":
			f.writes += m.GetCounter().GetValue()
		}
	}
	return f, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// print scrapes every function and prints the line when it changed.
func (s *status) print(urls map[string]string) {
	names := make([]string, 0, len(urls))
	for name := range urls {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		f, err := s.scrape(urls[name])
		if err != nil {
			parts = append(parts, name+": unreachable")
			continue
		}
		parts = append(parts, name+": "+f.String())
	}
	for _, line := range s.lines {
		parts = append(parts, line())
	}
	line := strings.Join(parts, "\n")
	if line == s.printed {
		return
	}
	s.printed = line
	if s.terminal {
		// One screen, redrawn in place: home, clear, the header, the block (lines that wrap or
		// hold several lines are no matter, as nothing is counted).
		fmt.Fprintf(s.out, "\033[H\033[2J%s\n\n%s\n", strings.Join(s.header, "\n"), line)
	} else {
		fmt.Fprintf(s.out, "%s\n\n", line)
	}
}
