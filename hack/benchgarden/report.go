package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
)

// report prints the table of every size so far, each side's detail, and the fits.
func report(out io.Writer, opts options, results []sizeResult) {
	fmt.Fprintf(out, "\nA garden of N Shoots; churn: each Shoot's status every %s, %d spec changes/h, Seed leases every %s, Seed status every %s; warm-up %s, window %s per side.\n",
		opts.churn.statusEvery, opts.churn.specPerHour, opts.churn.leaseEvery, opts.churn.seedStatusEvery, opts.warmup, opts.window)
	fmt.Fprintln(out, "Anonymous RSS leaves out the binaries' file pages (our source and Broker stand-in run as this benchmark's binary, where a cluster runs their own images).")
	fmt.Fprintln(out, "Per hour: the window scaled; ours add each sweep of an hour or more, fired once, by its period; Gardener's start-up reads are spread over one hour (start-up column).")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tside\tprocesses\tRSS mean\tanonymous RSS mean\tRSS peak\tsum of peaks\trestarts\tCPU-s/h\trequests/h\tread/h\tstart-up requests\tstart-up read\tchurn writes/s")
	for _, r := range results {
		for _, s := range []struct {
			name string
			res  sideResult
		}{{"ours", r.ours}, {"Gardener", r.peer}} {
			if s.res.processes == 0 {
				continue
			}
			var peaks, kills, anon int64
			for _, a := range s.res.window.Anon {
				anon += a
			}
			for _, p := range s.res.peaks {
				peaks += p
			}
			for _, k := range s.res.oomKills {
				kills += k
			}
			h := s.res.perHour
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%.0f\t%.0f\t%s\t%.0f\t%s\t%.0f\n", r.n, s.name, s.res.processes,
				benchkit.MiB(s.res.window.MeanRSS), benchkit.MiB(anon), benchkit.MiB(s.res.window.PeakRSS), benchkit.MiB(peaks), kills,
				h.cpu.Seconds(), h.requests, benchkit.Bytes(int64(h.bytes)), h.startRequests, benchkit.Bytes(int64(h.start)), r.churn)
		}
	}
	_ = tw.Flush()

	last := results[len(results)-1]
	for _, s := range []struct {
		name string
		res  sideResult
	}{{"ours", last.ours}, {"Gardener", last.peer}} {
		if s.res.processes == 0 {
			continue
		}
		fmt.Fprintf(out, "\nN=%d, %s, per process: mean RSS, mean anonymous RSS, peak RSS, restarts (an OOM kill for its memory limit or another exit); reads in the window (requests, bytes); for ours events delivered/min and keys reconciled for them/min:\n", last.n, s.name)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		names := make([]string, 0, len(s.res.peaks))
		for name := range s.res.peaks {
			names = append(names, name)
		}
		slices.Sort(names)
		minutes := opts.window.Minutes()
		for _, name := range names {
			reads := s.res.reads[name].Total()
			line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%d\t%d\t%s", name, benchkit.MiB(s.res.window.RSS[name]), benchkit.MiB(s.res.window.Anon[name]), benchkit.MiB(s.res.peaks[name]), s.res.oomKills[name], reads.Requests, benchkit.Bytes(reads.Bytes))
			if d, ok := s.res.events[name]; ok {
				line += fmt.Sprintf("\t%.1f\t%.1f", d.events/minutes, d.reconciled/minutes)
			}
			fmt.Fprintln(tw, line)
		}
		_ = tw.Flush()
		fmt.Fprintf(out, "  reads in the window by verb and resource (top 12): %s\n", topCalls(sum(s.res.reads), 12))
		for _, l := range s.res.long {
			requests, bytes := s.res.net(l, opts.window)
			fmt.Fprintf(out, "  long sweep %s (every %s), beyond its function's steady rate: %.0f requests, %s read; its function's CPU meanwhile %.1f s (%s)\n",
				l.sweep.name, l.sweep.period, requests, benchkit.Bytes(int64(bytes)), l.cpu.Seconds(), l.window.Round(time.Second))
		}
	}

	if len(results) < 2 {
		return
	}
	fmt.Fprintf(out, "\nFits cost = a + b·N over N = %s; the last column is an extrapolation to %d Shoots, beyond what was measured:\n", sizeList(results), extrapolateTo)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tside\ta\tb\tat 30,000")
	figures := []struct {
		name string
		of   func(sideResult) float64
	}{
		{"RSS mean (MiB)", func(s sideResult) float64 { return float64(s.window.MeanRSS) / (1 << 20) }},
		{"RSS peak (MiB)", func(s sideResult) float64 { return float64(s.window.PeakRSS) / (1 << 20) }},
		{"CPU-s/h", func(s sideResult) float64 { return s.perHour.cpu.Seconds() }},
		{"requests/h", func(s sideResult) float64 { return s.perHour.requests }},
		{"read/h (MiB)", func(s sideResult) float64 { return s.perHour.bytes / (1 << 20) }},
	}
	for _, f := range figures {
		for _, side := range []struct {
			name string
			of   func(sizeResult) sideResult
		}{{"ours", func(r sizeResult) sideResult { return r.ours }}, {"Gardener", func(r sizeResult) sideResult { return r.peer }}} {
			var ns []int
			var ys []float64
			for _, r := range results {
				if s := side.of(r); s.processes > 0 {
					ns = append(ns, r.n)
					ys = append(ys, f.of(s))
				}
			}
			l, err := benchkit.Fit(ns, ys)
			if err != nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.4f\t%.0f\n", f.name, side.name, l.A, l.B, l.At(extrapolateTo))
		}
	}
	_ = tw.Flush()
}

func sizeList(results []sizeResult) string {
	var parts []string
	for _, r := range results {
		parts = append(parts, fmt.Sprint(r.n))
	}
	return strings.Join(parts, ", ")
}

func topCalls(c benchkit.Counts, n int) string {
	var parts []string
	for i, call := range c.Calls() {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s %d/%s", call.Verb, call.Resource, c[call].Requests, benchkit.Bytes(c[call].Bytes)))
	}
	return strings.Join(parts, "; ")
}
