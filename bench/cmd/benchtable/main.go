// Command benchtable reads the output of
//
//	go test -run '^$' -bench . -benchmem -count N
//
// in the bench module on standard input and prints, for BENCHMARKS.md, one
// Markdown table per input: the median MB/s (with the lowest and highest of
// the N runs), ns/op, B/op and allocs/op of each implementation, and its
// throughput as a multiple of jsontext's and of encoding/json.Compact's
// medians from the same run (see -paired); then the same for cpu-MB/s (throughput per
// second of process CPU time, steadier when other work shares the cores). A line under each table says whether
// idemledger meets the targets of the benchmark issue.
//
// It reads only BenchmarkTransform/<input>/<implementation> results.
// benchstat (go tool benchstat) gives the statistics; this only arranges
// medians side by side, which benchstat cannot do for positional
// sub-benchmark names.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// samples holds the N measurements of one input and implementation.
type samples struct {
	mbps, cpumbps, nsop, bop, allocs []float64
}

// paired is for input made of N separate runs of -count 1 one after the
// other (interleaved: every implementation once per round). Then the k-th
// sample of every benchmark comes from round k, taken within seconds of the
// others, and each ratio is the median of the N per-round ratios: load that
// drifts between rounds cancels out.
var paired = flag.Bool("paired", false, "ratios as medians of per-round ratios (input: N runs of -count 1)")

func main() {
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *paired); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, paired bool) error {
	var inputs, impls []string
	data := map[[2]string]*samples{}
	r := benchfmt.NewReader(in, "stdin")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		base, parts := res.Name.Parts()
		if string(base) != "Transform" || len(parts) < 2 {
			continue
		}
		input := strings.TrimPrefix(string(parts[0]), "/")
		impl := strings.TrimPrefix(string(parts[1]), "/")
		if !slices.Contains(inputs, input) {
			inputs = append(inputs, input)
		}
		if !slices.Contains(impls, impl) {
			impls = append(impls, impl)
		}
		key := [2]string{input, impl}
		s := data[key]
		if s == nil {
			s = &samples{}
			data[key] = s
		}
		for _, v := range res.Values {
			unit, x := v.Unit, v.Value
			if v.OrigUnit != "" { // a tidied value: take it as go test wrote it
				unit, x = v.OrigUnit, v.OrigValue
			}
			switch unit {
			case "MB/s":
				s.mbps = append(s.mbps, x)
			case "cpu-MB/s":
				s.cpumbps = append(s.cpumbps, x)
			case "ns/op":
				s.nsop = append(s.nsop, x)
			case "B/op":
				s.bop = append(s.bop, x)
			case "allocs/op":
				s.allocs = append(s.allocs, x)
			}
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(inputs) == 0 {
		return fmt.Errorf("no BenchmarkTransform results on standard input")
	}
	for _, input := range inputs {
		jt, cp := data[[2]string{input, "jsontext"}], data[[2]string{input, "compact"}]
		if jt == nil || cp == nil {
			return fmt.Errorf("%s: jsontext or compact missing, ratios need both from the same run", input)
		}
		// rel is impl's throughput over the reference's: the ratio of
		// medians, or with -paired the median of per-round ratios.
		rel := func(xs, ref []float64) float64 {
			if !paired || len(xs) != len(ref) {
				return ratio(median(xs), median(ref))
			}
			rs := make([]float64, len(xs))
			for i := range xs {
				rs[i] = ratio(xs[i], ref[i])
			}
			return median(rs)
		}
		fmt.Fprintf(out, "#### %s\n\n", input)
		fmt.Fprintln(out, "| implementation | MB/s (median) | MB/s (min–max) | ns/op | B/op | allocs/op | × jsontext | × Compact | cpu-MB/s | × jsontext (CPU) | × Compact (CPU) |")
		fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, impl := range impls {
			s := data[[2]string{input, impl}]
			if s == nil {
				continue
			}
			fmt.Fprintf(out, "| %s | %.1f | %.1f–%.1f | %.0f | %.0f | %.0f | %.2f | %.2f | %.1f | %.2f | %.2f |\n",
				impl, median(s.mbps), slices.Min(s.mbps), slices.Max(s.mbps), median(s.nsop), median(s.bop), median(s.allocs),
				rel(s.mbps, jt.mbps), rel(s.mbps, cp.mbps), median(s.cpumbps), rel(s.cpumbps, jt.cpumbps), rel(s.cpumbps, cp.cpumbps))
		}
		if ours := data[[2]string{input, "idemledger"}]; ours != nil {
			wj, cj := rel(ours.mbps, jt.mbps), rel(ours.cpumbps, jt.cpumbps)
			wc, cc := rel(ours.mbps, cp.mbps), rel(ours.cpumbps, cp.cpumbps)
			fmt.Fprintf(out, "\nidemledger, %d runs: %.2f× jsontext by wall clock, %.2f× by CPU time (target ≥ 1: %s)",
				len(ours.mbps), wj, cj, verdict(wj >= 1, cj >= 1))
			fmt.Fprintf(out, "; %.2f× Compact by wall clock, %.2f× by CPU time", wc, cc)
			if input == "api-1KB" || input == "array-1MB" {
				fmt.Fprintf(out, " (target ≥ 0.5: %s)", verdict(wc >= 0.5, cc >= 0.5))
			}
			fmt.Fprintln(out, ".")
		}
		fmt.Fprintln(out)
	}
	return nil
}

// ratio is a/b, or NaN when b was not measured (no cpu-MB/s on this
// platform).
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func verdict(wall, cpu bool) string {
	switch {
	case wall && cpu:
		return "met"
	case wall:
		return "met by wall clock only"
	case cpu:
		return "met by CPU time only"
	}
	return "**missed**"
}

// median of a non-empty sample; the mean of the middle two for an even
// count, as benchstat reports it.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
