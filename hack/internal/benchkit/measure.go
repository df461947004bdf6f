package benchkit

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Window is what a side's processes used over one sync period at steady state.
type Window struct {
	// MeanRSS and PeakRSS are of the processes' summed resident memory, sampled every
	// sampleEvery; CPU is the CPU time they used in all.
	MeanRSS, PeakRSS int64
	CPU              time.Duration
	// RSS is each process's mean resident memory over the window, by name: one sample at its
	// end moved by ±15 MiB per process from run to run (the heap's peaks come and go with the
	// sweeps), enough to turn a fit per part of two sizes of N around.
	RSS map[string]int64
	// Anon is each process's mean anonymous resident memory (RssAnon) over the window, by name:
	// RSS without the pages of its binary, which it shares with the page cache and which do not
	// grow with shoots (the source and the Broker stand-in run as this benchmark's binary, 85 MB
	// of it resident, where a cluster runs their own images).
	Anon     map[string]int64
	From, To time.Time
}

const sampleEvery = 500 * time.Millisecond

// Measure samples procs for d.
func Measure(ctx context.Context, procs []*Process, d time.Duration) (Window, error) {
	w := Window{From: time.Now(), RSS: map[string]int64{}, Anon: map[string]int64{}}
	first, err := Sample(procs)
	if err != nil {
		return w, err
	}
	var sum int64
	var samples int64
	perProcess := make([]int64, len(procs))
	perProcessAnon := make([]int64, len(procs))
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	end := time.After(d)
	last := first
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-end:
			done = true
		case <-ticker.C:
		}
		now, err := Sample(procs)
		if err != nil {
			return w, err
		}
		var rss int64
		for i, u := range now {
			rss += u.RSS
			perProcess[i] += u.RSS
			perProcessAnon[i] += u.Anon
		}
		sum += rss
		samples++
		w.PeakRSS = max(w.PeakRSS, rss)
		last = now
	}
	w.To = time.Now()
	w.MeanRSS = sum / samples
	for i, p := range procs {
		w.CPU += last[i].CPU - first[i].CPU
		w.RSS[p.Name] = perProcess[i] / samples
		w.Anon[p.Name] = perProcessAnon[i] / samples
	}
	// The window lasts a little longer than d: the CPU time is scaled to exactly one period.
	w.CPU = time.Duration(float64(w.CPU) * float64(d) / float64(w.To.Sub(w.From)))
	return w, nil
}

func Sample(procs []*Process) ([]Usage, error) {
	us := make([]Usage, len(procs))
	for i, p := range procs {
		if err := p.Alive(); err != nil {
			return nil, err
		}
		u, err := p.Usage()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		us[i] = u
	}
	return us, nil
}

// SumPeaks is the sum of each process's own peak resident memory (VmHWM) so far: at most what
// they held at once, at least the peak of any one.
func SumPeaks(procs []*Process) (int64, error) {
	us, err := Sample(procs)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, u := range us {
		sum += u.Peak
	}
	return sum, nil
}

// Percentile is the nearest-rank percentile p (0–100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func MiB(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }
