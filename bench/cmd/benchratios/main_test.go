package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A small ledger-postgres input, two rounds with one client count, to
// check the table's arithmetic by hand; clients=8 and 32 are missing, so
// run must fail, and TestRunPostgresByHand reads the figures directly.
const pgRounds = `goos: linux
BenchmarkPostgresMutate/clients=1/plain-2   1000  625000 ns/op  300 cpu-ns/op  200 server-cpu-ns/op  1600 ops/s
BenchmarkPostgresMutate/clients=1/first-2   1000 1250000 ns/op  700 cpu-ns/op  500 server-cpu-ns/op   800 ops/s
BenchmarkPostgresMutate/clients=1/replay-2  1000 1000000 ns/op  600 cpu-ns/op  400 server-cpu-ns/op  1000 ops/s
goos: linux
BenchmarkPostgresMutate/clients=1/plain-2   1000  500000 ns/op  400 cpu-ns/op  200 server-cpu-ns/op  2000 ops/s
BenchmarkPostgresMutate/clients=1/first-2   1000 1000000 ns/op  900 cpu-ns/op  600 server-cpu-ns/op  1000 ops/s
BenchmarkPostgresMutate/clients=1/replay-2  1000  800000 ns/op  800 cpu-ns/op  400 server-cpu-ns/op  1250 ops/s
`

func TestRunPostgresByHand(t *testing.T) {
	rounds, err := readRounds(strings.NewReader(pgRounds), "in")
	if err != nil {
		t.Fatal(err)
	}
	addTotalCPU(rounds)
	f := &figures{rounds: rounds}
	const p = "BenchmarkPostgresMutate/clients=1/"
	tests := []struct {
		what string
		got  summary
		want summary
	}{
		// Totals: plain 500 and 600, first 1200 and 1500, replay 1000 and 1200.
		{"total CPU of first", f.values(p+"first", totalCPU), summary{1350, 1200, 1500}},
		// ops/s per round: 800/1600, 1000/2000.
		{"first × plain throughput", f.ratio(p+"first", p+"plain", "ops/s"), summary{0.5, 0.5, 0.5}},
		// plain's total CPU over first's: 500/1200, 600/1500.
		{"first × plain CPU", f.ratio(p+"plain", p+"first", totalCPU), summary{(500.0/1200 + 600.0/1500) / 2, 600.0 / 1500, 500.0 / 1200}},
		// 1000/800, 1250/1000: the same 1.25 in both rounds.
		{"replay vs first", f.ratio(p+"replay", p+"first", "ops/s"), summary{1.25, 1.25, 1.25}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.what, tt.got, tt.want)
		}
	}
	if f.err != nil {
		t.Fatal(f.err)
	}

	var out strings.Builder
	err = run(strings.NewReader(pgRounds), &out, "ledger-postgres")
	if err == nil || !strings.Contains(err.Error(), "ledger-postgres: BenchmarkPostgresMutate/clients=8/plain is in no round (of 2)") {
		t.Errorf("run without clients=8: error %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("run wrote tables with figures missing:\n%s", out.String())
	}
}

// TestAddTotalCPU: a round with the client's CPU time only gets no total,
// so it drops out of the CPU ratio instead of counting the server as free.
func TestAddTotalCPU(t *testing.T) {
	rounds := []round{
		{"A": {"cpu-ns/op": 3, "server-cpu-ns/op": 4}},
		{"A": {"cpu-ns/op": 3}},
		{"A": {"server-cpu-ns/op": 4}},
	}
	addTotalCPU(rounds)
	if got := series(rounds, "A", totalCPU); len(got) != 1 || got[0] != 7 {
		t.Errorf("totals %v, want [7]", got)
	}
}

func TestRunErrors(t *testing.T) {
	raw := func(s string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "results", resultsDate+"-"+s+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, section, in, want string
	}{
		{"unknown section", "ledger", "", `unknown section "ledger": want one of idemhttp, idemhttp-clients, idemhttp-clients-quiet, ledger-postgres, ledger-postgres-pgx, ledger-postgres-pgx-async, ledger-postgres-pgx-async-before, ledger-postgres-pgx-before, ledger-postgres-pgx-quiet, ledger-sqlite`},
		{"not benchmark output", "idemhttp", "PASS\n", `no "goos:" line`},
		{"malformed line", "idemhttp", "goos: linux\nBenchmarkMiddleware/sync=FULL/inproc/bare-2 10 5 ns/op 7\n",
			"malformed benchmark line: stdin:2: missing units"},
		{"another section's rounds", "ledger-sqlite", raw("idemhttp"),
			"ledger-sqlite: BenchmarkMutate/sync=FULL/plain is in no round (of 6)"},
		{"rounds without CPU time", "idemhttp",
			strings.ReplaceAll(raw("idemhttp"), "cpu-ns/op", "cpu-ms/op"),
			"idemhttp: BenchmarkMiddleware/sync=FULL/inproc/bare has no cpu-ns/op in any round (of 6)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(strings.NewReader(tt.in), &out, tt.section)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("wrote output with the error:\n%s", out.String())
			}
		})
	}
}

// FuzzRun checks that no input makes run panic, and that it writes either
// tables or an error, never both.
func FuzzRun(f *testing.F) {
	f.Add("goos: linux\nBenchmarkA-2 10 5 ns/op\n")
	f.Add("goos: linux\nBenchmarkMutate/sync=FULL/plain-2 10 5 ns/op 3 cpu-ns/op 18 allocs/op\nBenchmarkPurge 1 5 ns/op 2 rows/s\n")
	f.Add(pgRounds)
	f.Fuzz(func(t *testing.T, in string) {
		for _, s := range sections {
			var out strings.Builder
			if err := run(strings.NewReader(in), &out, s); err != nil && out.Len() != 0 {
				t.Errorf("%s: error %v with output", s, err)
			}
		}
	})
}
