package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadRounds(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []round
	}{
		{
			name: "custom metrics and the GOMAXPROCS suffix",
			in: "goos: linux\ngoarch: amd64\npkg: example\ncpu: AMD EPYC\n" +
				"BenchmarkMutate/sync=FULL/plain-2 \t 3019\t 387931 ns/op\t 245829 cpu-ns/op\t 650 B/op\t 18 allocs/op\n" +
				"PASS\nok  \texample\t12.3s\n",
			want: []round{{"BenchmarkMutate/sync=FULL/plain": {
				"ns/op": 387931, "cpu-ns/op": 245829, "B/op": 650, "allocs/op": 18}}},
		},
		{
			name: "server CPU and a throughput unit",
			in: "goos: linux\n" +
				"BenchmarkPostgresMutate/clients=32/plain-2 1000 438 ns/op 157.5 cpu-ns/op 186.25 server-cpu-ns/op 2278 ops/s\n",
			want: []round{{"BenchmarkPostgresMutate/clients=32/plain": {
				"ns/op": 438, "cpu-ns/op": 157.5, "server-cpu-ns/op": 186.25, "ops/s": 2278}}},
		},
		{
			// Only the last -digits are GOMAXPROCS; "-nodb" is part of
			// the name.
			name: "a dash in the name",
			in:   "goos: linux\nBenchmarkClaimComplete/sync=FULL-nodb-2 1676 716586 ns/op\n",
			want: []round{{"BenchmarkClaimComplete/sync=FULL-nodb": {"ns/op": 716586}}},
		},
		{
			// With GOMAXPROCS=1, go test prints no suffix.
			name: "no GOMAXPROCS suffix",
			in:   "goos: linux\nBenchmarkPurge 1 1563644472 ns/op 34.69 ms/longest-batch 63953 rows/s\n",
			want: []round{{"BenchmarkPurge": {"ns/op": 1563644472, "ms/longest-batch": 34.69, "rows/s": 63953}}},
		},
		{
			// benchfmt tidies MB/s to B/s and cpu-ns/op to cpu-sec/op;
			// the tables use the units as written.
			name: "units as go test wrote them",
			in:   "goos: linux\nBenchmarkT-2 100 1000 ns/op 100.00 MB/s 12140 cpu-ns/row\n",
			want: []round{{"BenchmarkT": {"ns/op": 1000, "MB/s": 100, "cpu-ns/row": 12140}}},
		},
		{
			name: "missing metrics are absent, not zero",
			in:   "goos: linux\nBenchmarkA-2 10 5 ns/op 3 cpu-ns/op\ngoos: linux\nBenchmarkA-2 10 6 ns/op\n",
			want: []round{
				{"BenchmarkA": {"ns/op": 5, "cpu-ns/op": 3}},
				{"BenchmarkA": {"ns/op": 6}},
			},
		},
		{
			// go test -v prints a benchmark's name alone when it starts,
			// and its log lines indented under --- BENCH.
			name: "verbose output",
			in: "goos: linux\n=== RUN   BenchmarkA\nBenchmarkA\nBenchmarkA-2 10 5 ns/op\n" +
				"--- BENCH: BenchmarkA-2\n    bench_test.go:10: note\n",
			want: []round{{"BenchmarkA": {"ns/op": 5}}},
		},
		{
			// The k-th header starts round k, and a round keeps what ran
			// in it: B failed in round 2, A in round 3.
			name: "rounds by header",
			in: "goos: linux\nBenchmarkA-2 10 1 ns/op\nBenchmarkB-2 10 2 ns/op\nPASS\n" +
				"goos: linux\nBenchmarkA-2 10 3 ns/op\n--- FAIL: BenchmarkB-2\nFAIL\n" +
				"goos: linux\ngoarch: amd64\nBenchmarkB-2 10 4 ns/op\n" +
				"goos: linux\n",
			want: []round{
				{"BenchmarkA": {"ns/op": 1}, "BenchmarkB": {"ns/op": 2}},
				{"BenchmarkA": {"ns/op": 3}},
				{"BenchmarkB": {"ns/op": 4}},
				{},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readRounds(strings.NewReader(tt.in), "in")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestReadRoundsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", `in: no "goos:" line`},
		{"no header", "BenchmarkA-2 10 5 ns/op\n", `in: no "goos:" line`},
		{"result before the first header", "BenchmarkA-2 10 5 ns/op\ngoos: linux\n",
			`in:1: BenchmarkA before the first "goos:" line`},
		{"value without a unit", "goos: linux\nBenchmarkA-2 10 5 ns/op 7\n",
			"malformed benchmark line: in:2: missing units"},
		{"value not a number", "goos: linux\nBenchmarkA-2 10 five ns/op\n",
			"malformed benchmark line: in:2: parsing measurement"},
		{"iterations not a number", "goos: linux\nBenchmarkA-2 ten 5 ns/op\n",
			"malformed benchmark line: in:2: parsing iteration count"},
		{"no measurements", "goos: linux\nBenchmarkA-2 10\n",
			"malformed benchmark line: in:2: missing measurements"},
		{"twice in a round", "goos: linux\nBenchmarkA-2 10 5 ns/op\nBenchmarkA-2 10 6 ns/op\n",
			"in:3: BenchmarkA a second time in round 1"},
		{"line too long", "goos: linux\nBenchmarkA-2 10 5 " + strings.Repeat("x", 70000) + "\n",
			"reading in: bufio.Scanner: token too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readRounds(strings.NewReader(tt.in), "in")
			if err == nil {
				t.Fatalf("no error; rounds %v", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
