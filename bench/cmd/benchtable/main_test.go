package main

import (
	"strings"
	"testing"
)

// Two rounds; the load slows ours and jsontext in round 2, so the ratio of
// medians (80/45) and the median of per-round ratios (2 and 1.5) differ,
// and the test pins both.
const twoRounds = `goos: linux
BenchmarkTransform/api-1KB/idemledger-2  100  1000 ns/op  100.00 MB/s  200.0 cpu-MB/s  1024 B/op  1 allocs/op
BenchmarkTransform/api-1KB/jsontext-2    100  2000 ns/op   50.00 MB/s  100.0 cpu-MB/s  1137 B/op  4 allocs/op
BenchmarkTransform/api-1KB/compact-2     100   400 ns/op  250.00 MB/s  500.0 cpu-MB/s  1024 B/op  1 allocs/op
BenchmarkTransform/api-1KB/idemledger-2  100  1500 ns/op   60.00 MB/s  120.0 cpu-MB/s  1024 B/op  1 allocs/op
BenchmarkTransform/api-1KB/jsontext-2    100  2500 ns/op   40.00 MB/s   80.0 cpu-MB/s  1137 B/op  4 allocs/op
BenchmarkTransform/api-1KB/compact-2     100   400 ns/op  250.00 MB/s  500.0 cpu-MB/s  1024 B/op  1 allocs/op
BenchmarkOther-2                         100   500 ns/op
`

func TestRun(t *testing.T) {
	tests := []struct {
		paired bool
		want   []string
	}{
		{false, []string{
			"#### api-1KB",
			"| idemledger | 80.0 | 60.0–100.0 | 1250 | 1024 | 1 | 1.78 | 0.32 | 160.0 | 1.78 | 0.32 |",
			"| jsontext | 45.0 | 40.0–50.0 | 2250 | 1137 | 4 | 1.00 | 0.18 | 90.0 | 1.00 | 0.18 |",
			"| compact | 250.0 | 250.0–250.0 | 400 | 1024 | 1 | 5.56 | 1.00 | 500.0 | 5.56 | 1.00 |",
			"idemledger, 2 runs: 1.78× jsontext by wall clock, 1.78× by CPU time (target ≥ 1: met); 0.32× Compact by wall clock, 0.32× by CPU time (target ≥ 0.5: **missed**).",
		}},
		{true, []string{
			"| idemledger | 80.0 | 60.0–100.0 | 1250 | 1024 | 1 | 1.75 | 0.32 | 160.0 | 1.75 | 0.32 |",
			"| jsontext | 45.0 | 40.0–50.0 | 2250 | 1137 | 4 | 1.00 | 0.18 | 90.0 | 1.00 | 0.18 |",
			"idemledger, 2 runs: 1.75× jsontext by wall clock, 1.75× by CPU time (target ≥ 1: met)",
		}},
	}
	for _, tt := range tests {
		var out strings.Builder
		if err := run(strings.NewReader(twoRounds), &out, tt.paired); err != nil {
			t.Fatalf("paired=%v: %v", tt.paired, err)
		}
		for _, line := range tt.want {
			if !strings.Contains(out.String(), line) {
				t.Errorf("paired=%v: output lacks\n%s\ngot:\n%s", tt.paired, line, out.String())
			}
		}
		if strings.Contains(out.String(), "Other") {
			t.Errorf("paired=%v: a benchmark other than Transform was tabulated", tt.paired)
		}
	}
}

func TestRunNeedsReferences(t *testing.T) {
	in := "BenchmarkTransform/api-1KB/idemledger-2  100  1000 ns/op  100.00 MB/s\n"
	var out strings.Builder
	if err := run(strings.NewReader(in), &out, false); err == nil {
		t.Error("no error without jsontext and compact")
	}
	if err := run(strings.NewReader("PASS\n"), &out, false); err == nil {
		t.Error("no error on input without results")
	}
}
