//go:build !unix

package bench

// processCPU is not measured on this platform; the benchmarks then report
// wall-clock figures only.
func processCPU() (int64, bool) { return 0, false }
