// Command benchratios turns interleaved rounds of the ledger and idemhttp
// benchmarks into the ratio tables of BENCHMARKS.md:
//
//	go run ./cmd/benchratios ledger-sqlite < results/2026-11-30-ledger-sqlite.txt
//	go run ./cmd/benchratios idemhttp < results/2026-11-30-idemhttp.txt
//	go run ./cmd/benchratios ledger-postgres < results/2026-11-30-ledger-postgres.txt
//
// from the bench directory, one argument per section of BENCHMARKS.md:
// "ledger (SQLite)", "idemhttp" and "ledger (PostgreSQL)".
//
// The input is N runs of a test binary with -test.count 1 appended one
// after the other, each starting with its own "goos:" line, so that every
// benchmark ran once per round, a few seconds from its baseline. Each
// ratio is the median of the N per-round ratios of a benchmark to its
// baseline from the same round, with the lowest and highest of them: on a
// shared machine, load drifts between rounds more than within one, and
// the per-round ratio cancels it. Absolute figures are medians, (min–max)
// where the table shows a spread.
//
// benchtable does the same for the canonicalizer benchmarks (-paired);
// both read the benchmark lines with golang.org/x/perf/benchfmt.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchratios {%s} < rounds.txt\n", strings.Join(layoutNames(), "|"))
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "benchratios:", err)
		os.Exit(1)
	}
}

// run reads rounds from in and writes the tables of section to out, or
// nothing if a figure is missing or the input malformed.
func run(in io.Reader, out io.Writer, section string) error {
	lay, ok := layouts[section]
	if !ok {
		return fmt.Errorf("unknown section %q: want one of %s", section, strings.Join(layoutNames(), ", "))
	}
	rounds, err := readRounds(in, "stdin")
	if err != nil {
		return err
	}
	f := &figures{rounds: rounds}
	var buf bytes.Buffer
	lay(&buf, f)
	if f.err != nil {
		return fmt.Errorf("%s: %w", section, f.err)
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing the tables: %w", err)
	}
	return nil
}

// layoutNames are the sections run accepts, sorted for messages.
func layoutNames() []string {
	return slices.Sorted(maps.Keys(layouts))
}
