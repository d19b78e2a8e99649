package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// metrics are one benchmark's measurements in one round, by unit, as go
// test wrote them ("ns/op", "cpu-ns/op", "rows/s", ...).
type metrics map[string]float64

// A round is one run of the test binary: the metrics of each benchmark it
// ran, by name without the GOMAXPROCS suffix
// ("BenchmarkMutate/sync=FULL/plain").
type round map[string]metrics

// roundHeader starts every run of a test binary, so it is where one round
// ends and the next begins.
var roundHeader = []byte("goos:")

// readRounds reads benchmark output made of runs of a test binary with
// -test.count 1 appended one after the other, and returns one round per
// run, in order. name is used in error messages. The benchmark lines are
// parsed by benchfmt, as benchtable and benchstat parse them; a line it
// cannot parse is an error, not a silently missing figure.
func readRounds(in io.Reader, name string) ([]round, error) {
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	// benchfmt reads the header as configuration but does not say where
	// a repeated one appears, so find the rounds' first lines here and
	// place each result after them by its line number.
	var starts []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		if bytes.HasPrefix(sc.Bytes(), roundHeader) {
			starts = append(starts, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("%s: no %q line: not the output of go test -bench", name, roundHeader)
	}
	rounds := make([]round, len(starts))
	for i := range rounds {
		rounds[i] = round{}
	}
	r := benchfmt.NewReader(bytes.NewReader(data), name)
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			return nil, fmt.Errorf("malformed benchmark line: %w", rec)
		case *benchfmt.Result:
			_, line := rec.Pos()
			k := sort.SearchInts(starts, line) - 1 // the last header above the line
			bench := benchName(rec.Name)
			if k < 0 {
				return nil, fmt.Errorf("%s:%d: %s before the first %q line: each round must be a whole run of the test binary", name, line, bench, roundHeader)
			}
			if _, dup := rounds[k][bench]; dup {
				return nil, fmt.Errorf("%s:%d: %s a second time in round %d: run each round with -test.count 1", name, line, bench, k+1)
			}
			m := metrics{}
			for _, v := range rec.Values {
				unit, x := v.Unit, v.Value
				if v.OrigUnit != "" { // a tidied value: take it as go test wrote it
					unit, x = v.OrigUnit, v.OrigValue
				}
				m[unit] = x
			}
			rounds[k][bench] = m
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return rounds, nil
}

// benchName is the benchmark's full name without the -N GOMAXPROCS
// suffix, which would otherwise make the names depend on the machine.
func benchName(n benchfmt.Name) string {
	base, parts := n.Parts()
	if k := len(parts) - 1; k >= 0 && strings.HasPrefix(string(parts[k]), "-") {
		parts = parts[:k]
	}
	var b strings.Builder
	b.WriteString("Benchmark")
	b.Write(base)
	for _, p := range parts {
		b.Write(p)
	}
	return b.String()
}
