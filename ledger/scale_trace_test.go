package ledger

// The scale purge's trace: what the pool and the purge did
// (package spans: checkpoints, purge batches in their parts, reclaim steps)
// on the load's clock, to find what the load's slowest requests waited
// for. scalePurge sets it up; it logs a summary of each phase, and with
// IDEMLEDGER_SCALE_TRACE=1 the slowest requests with what ran beside each.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/cputime"
	"github.com/idemledger/idemledger/internal/spans"
)

// scaleTraceEnv, when 1, logs the slowest requests of each phase of the
// purge with the spans that ran beside them.
const scaleTraceEnv = "IDEMLEDGER_SCALE_TRACE"

// scaleTrace keeps the spans recorded during a scale run and the
// runtime's scheduling and GC histograms at its marks.
type scaleTrace struct {
	t0    time.Time
	mu    sync.Mutex
	spans []spans.Span
	marks []traceMark
}

type traceMark struct {
	name string
	at   time.Time
	cpu  time.Duration // the process's CPU time so far
	m    []metrics.Sample
}

// runtimeMetrics: how long runnable goroutines waited to run, and the
// stop-the-world pauses of the GC.
var runtimeMetrics = []string{"/sched/latencies:seconds", "/sched/pauses/total/gc:seconds"}

func startScaleTrace(t *testing.T, t0 time.Time) *scaleTrace {
	tr := &scaleTrace{t0: t0}
	restore := spans.Set(func(s spans.Span) {
		tr.mu.Lock()
		tr.spans = append(tr.spans, s)
		tr.mu.Unlock()
	})
	t.Cleanup(restore)
	tr.mark("start")
	return tr
}

// mark reads the runtime's histograms now.
func (tr *scaleTrace) mark(name string) {
	m := make([]metrics.Sample, len(runtimeMetrics))
	for i, n := range runtimeMetrics {
		m[i].Name = n
	}
	metrics.Read(m)
	tr.marks = append(tr.marks, traceMark{name, time.Now(), cputime.Process(), m})
}

// rel is t's seconds since the load started.
func (tr *scaleTrace) rel(t time.Time) string {
	return fmt.Sprintf("%.3f s", t.Sub(tr.t0).Seconds())
}

type tracePhase struct {
	name     string
	from, to time.Time
}

// report logs, for each phase: the spans of each kind (count, share of the
// phase, and their durations), the requests' parts, and which kinds of span
// the slow requests ran beside more often than all requests did.
func (tr *scaleTrace) report(t *testing.T, engine string, samples []sample, phases []tracePhase) {
	tr.mu.Lock()
	all := slices.Clone(tr.spans)
	tr.mu.Unlock()
	slices.SortFunc(all, func(a, b spans.Span) int { return a.Start.Compare(b.Start) })
	var longest time.Duration
	for _, s := range all {
		longest = max(longest, s.Took)
	}
	var base time.Duration // the load's p99 without the purge
	for i, p := range phases {
		var in []sample
		for _, s := range samples {
			if !s.at.Before(p.from) && s.at.Before(p.to) {
				in = append(in, s)
			}
		}
		took := make(latencies, len(in))
		for j, s := range in {
			took[j] = s.took
		}
		slices.Sort(took)
		if i == 0 {
			base = took.at(0.99)
		}
		dur := p.to.Sub(p.from)
		t.Logf("%s trace %s (%.1f s, %s to %s):", engine, p.name, dur.Seconds(), tr.rel(p.from), tr.rel(p.to))
		kinds := map[string][]spans.Span{}
		var names []string
		for _, s := range all {
			if s.Start.Before(p.from) || !s.Start.Before(p.to) {
				continue
			}
			if kinds[s.Kind] == nil {
				names = append(names, s.Kind)
			}
			kinds[s.Kind] = append(kinds[s.Kind], s)
		}
		slices.Sort(names)
		for _, k := range names {
			var d, w latencies
			var sum time.Duration
			var n int64
			for _, s := range kinds[k] {
				d = append(d, s.Took)
				w = append(w, s.Wait)
				sum += s.Took
				n += s.N
			}
			slices.Sort(d)
			slices.Sort(w)
			extra := ""
			if w.at(1) > 0 {
				extra = fmt.Sprintf("; its wait for the slot p50 %s, max %s ms", ms(w.at(0.5)), ms(w.at(1)))
			}
			t.Logf("  %-34s %6d, %5.1f%% of the time, p50 %s ms, p99 %s ms, max %s ms, N %d%s",
				k, len(d), 100*sum.Seconds()/dur.Seconds(), ms(d.at(0.5)), ms(d.at(0.99)), ms(d.at(1)), n, extra)
		}
		if len(in) == 0 {
			continue
		}
		partsOf := func(ss []sample) string {
			var late, begin, work, commit latencies
			for _, s := range ss {
				late = append(late, s.late)
				begin = append(begin, s.parts.begin)
				work = append(work, s.parts.work)
				commit = append(commit, s.parts.commit)
			}
			f := func(l latencies) string {
				slices.Sort(l)
				return fmt.Sprintf("%s/%s/%s", ms(l.at(0.5)), ms(l.at(0.99)), ms(l.at(1)))
			}
			return fmt.Sprintf("late %s, begin %s, work %s, commit %s ms (p50/p99/max)", f(late), f(begin), f(work), f(commit))
		}
		t.Logf("  requests: %d, p99 %s ms; %s", len(in), ms(took.at(0.99)), partsOf(in))
		// The tail: past three times the p99 without the purge, the
		// bound the issue sets.
		slow := 3 * base
		var tail []sample
		for _, s := range in {
			if s.took > slow {
				tail = append(tail, s)
			}
		}
		if len(tail) == 0 || i == 0 {
			continue
		}
		t.Logf("  tail (over %s ms, 3x the p99 without): %d requests (%.1f%%); %s", ms(slow), len(tail), 100*float64(len(tail))/float64(len(in)), partsOf(tail))
		// When the tail came: spread over the phase, or in a burst.
		const bucket = 5 * time.Second
		counts := make([]int, int(dur/bucket)+1)
		for _, s := range tail {
			counts[int(s.at.Sub(p.from)/bucket)]++
		}
		var when []string
		for _, c := range counts {
			when = append(when, fmt.Sprint(c))
		}
		t.Logf("  tail by %v from the phase's start: %s", bucket, strings.Join(when, " "))
		// Which kinds the tail ran beside, against all requests: a kind
		// that every request meets explains nothing.
		beside := func(ss []sample, kind string, least time.Duration) int {
			n := 0
			for _, s := range ss {
				if len(tr.overlapping(all, longest, s, kind, least)) > 0 {
					n++
				}
			}
			return n
		}
		for _, k := range names {
			for _, least := range []time.Duration{0, 10 * time.Millisecond} {
				nt, na := beside(tail, k, least), beside(in, k, least)
				if na == 0 {
					continue
				}
				t.Logf("  beside %-34s (%2.0f ms or longer): the tail %5.1f%%, all requests %5.1f%%", k, least.Seconds()*1e3,
					100*float64(nt)/float64(len(tail)), 100*float64(na)/float64(len(in)))
			}
		}
		if os.Getenv(scaleTraceEnv) != "1" {
			continue
		}
		slices.SortFunc(tail, func(a, b sample) int { return int(b.took - a.took) })
		for _, s := range tail[:min(12, len(tail))] {
			var b strings.Builder
			for _, sp := range tr.overlapping(all, longest, s, "", time.Millisecond) {
				fmt.Fprintf(&b, "\n      %s at %s took %s ms", sp.Kind, tr.rel(sp.Start), ms(sp.Took))
				if sp.Wait > 0 {
					fmt.Fprintf(&b, " (waited %s ms)", ms(sp.Wait))
				}
				if sp.N > 0 {
					fmt.Fprintf(&b, " N %d M %d", sp.N, sp.M)
				}
			}
			t.Logf("  slow: due %s, took %s ms (late %s, begin %s, work %s, commit %s), beside:%s", tr.rel(s.at), ms(s.took),
				ms(s.late), ms(s.parts.begin), ms(s.parts.work), ms(s.parts.commit), b.String())
		}
	}
	for i := 1; i < len(tr.marks); i++ {
		a, b := tr.marks[i-1], tr.marks[i]
		var out []string
		for j, name := range runtimeMetrics {
			h0, h1 := a.m[j].Value.Float64Histogram(), b.m[j].Value.Float64Histogram()
			out = append(out, fmt.Sprintf("%s %s", name, histDiff(h0, h1)))
		}
		t.Logf("%s runtime from %s to %s: the process used %.2f of %d cores (GOMAXPROCS); %s", engine, a.name, b.name,
			(b.cpu-a.cpu).Seconds()/b.at.Sub(a.at).Seconds(), runtime.GOMAXPROCS(0), strings.Join(out, "; "))
	}
}

// overlapping returns the spans of kind (any, if empty) at least least
// long that ran while s did, from all sorted by start, none longer than
// longest.
func (tr *scaleTrace) overlapping(all []spans.Span, longest time.Duration, s sample, kind string, least time.Duration) []spans.Span {
	from, to := s.at, s.at.Add(s.took)
	i, _ := slices.BinarySearchFunc(all, from.Add(-longest), func(a spans.Span, t time.Time) int { return a.Start.Compare(t) })
	var out []spans.Span
	for ; i < len(all) && all[i].Start.Before(to); i++ {
		sp := all[i]
		if (kind != "" && sp.Kind != kind) || sp.Took < least || !sp.Start.Add(sp.Took).After(from) {
			continue
		}
		out = append(out, sp)
	}
	return out
}

// histDiff describes the events between two readings of one histogram:
// their count, p99 and largest bucket.
func histDiff(h0, h1 *metrics.Float64Histogram) string {
	counts := make([]uint64, len(h1.Counts))
	var n uint64
	for i := range counts {
		counts[i] = h1.Counts[i] - h0.Counts[i]
		n += counts[i]
	}
	if n == 0 {
		return "none"
	}
	at := func(q float64) float64 {
		want := uint64(float64(n)*q + 0.999999)
		var c uint64
		for i, k := range counts {
			c += k
			if c >= want {
				return h1.Buckets[i+1]
			}
		}
		return h1.Buckets[len(h1.Buckets)-1]
	}
	top := 0.0
	for i, k := range counts {
		if k > 0 {
			top = h1.Buckets[i+1]
		}
	}
	return fmt.Sprintf("n %d, p99 under %.2f ms, max under %.2f ms", n, at(0.99)*1e3, top*1e3)
}
