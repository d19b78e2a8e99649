package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The goldens in testdata/ are the tables of BENCHMARKS.md for the rounds
// committed in bench/results/ under the date resultsDate. They are
// produced, from the bench directory, by
//
//	go run ./cmd/benchratios $s < results/$DATE-$s.txt > cmd/benchratios/testdata/$s.golden
//
// for s in ledger-sqlite, ledger-sqlite-row, ledger-sqlite-full, idemhttp
// and ledger-postgres ($DATE is resultsDate), and idemhttp-clients ($DATE
// from sectionDates). The command's output was first checked byte for byte against the Python script it
// replaced, on the rounds of 2026-11-29 (git show
// 54003fe:bench/results/pairs.py); TestGoldenTablesInBenchmarksMD keeps
// BENCHMARKS.md showing the tables of the sections it still prints. When the benchmarks are run again,
// commit the new rounds, set resultsDate, and rewrite the goldens and the
// tables of BENCHMARKS.md together.
const resultsDate = "2026-11-30"

var sections = []string{"ledger-sqlite", "ledger-sqlite-row", "ledger-sqlite-full", "idemhttp", "ledger-postgres", "idemhttp-clients",
	"ledger-postgres-pgx-before", "ledger-postgres-pgx", "ledger-postgres-pgx-async-before", "ledger-postgres-pgx-async",
	"idemhttp-clients-quiet", "ledger-postgres-pgx-quiet"}

// sectionDates holds the sections measured on another date than
// resultsDate: idemhttp-clients is issue 14's (2026-12-01), whose rounds
// are the replay build's half of an A/B run; the ledger-postgres-pgx ones
// are the A/B of pgx's batched Mutate (issue 13); idemhttp-clients-quiet
// and ledger-postgres-pgx-quiet are issue 14's and issue 13's benchmarks
// again on a quiet machine.
var sectionDates = map[string]string{
	"idemhttp-clients":                 "2026-12-01",
	"ledger-postgres-pgx-before":       "2026-12-01",
	"ledger-postgres-pgx":              "2026-12-01",
	"ledger-postgres-pgx-async-before": "2026-12-01",
	"ledger-postgres-pgx-async":        "2026-12-01",
	"idemhttp-clients-quiet":           "2026-12-01",
	"ledger-postgres-pgx-quiet":        "2026-12-01",
}

// resultsFile is the committed rounds of section s.
func resultsFile(s string) string {
	date := resultsDate
	if d, ok := sectionDates[s]; ok {
		date = d
	}
	return filepath.Join("..", "..", "results", date+"-"+s+".txt")
}

func TestGolden(t *testing.T) {
	for _, s := range sections {
		t.Run(s, func(t *testing.T) {
			in, err := os.Open(resultsFile(s))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var got bytes.Buffer
			if err := run(in, &got, s); err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, s)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("output differs from testdata/%s.golden at %s", s, firstDiff(got.String(), string(want)))
			}
		})
	}
}

// shown are the sections whose tables BENCHMARKS.md still prints: the
// others were superseded by later runs (their goldens still pin this
// command's output on their committed rounds, and git keeps the text).
var shown = []string{"ledger-sqlite-row", "ledger-postgres-pgx-quiet"}

// TestGoldenTablesInBenchmarksMD checks that every table of the shown
// goldens is in BENCHMARKS.md as printed, in the same order, so that the
// figures there are the ones this command computes from the committed
// rounds.
func TestGoldenTablesInBenchmarksMD(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(md)
	for _, s := range shown {
		at := 0
		for i, table := range tables(string(readGolden(t, s))) {
			k := strings.Index(doc[at:], "\n"+table)
			if k < 0 {
				t.Errorf("%s: table %d is not in BENCHMARKS.md after the one before it:\n%s", s, i+1, table)
				continue
			}
			at += k + len(table)
		}
	}
}

func readGolden(t *testing.T, section string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", section+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tables returns the Markdown tables of out: each run of lines starting
// with "|", with its final newline.
func tables(out string) []string {
	var ts []string
	var cur strings.Builder
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "|") {
			cur.WriteString(line)
			continue
		}
		if cur.Len() > 0 {
			ts = append(ts, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		ts = append(ts, cur.String())
	}
	return ts
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\ngot  %s\nwant %s", i+1, gl, wl)
		}
	}
	return "the end"
}
