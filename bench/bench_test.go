package bench

import "testing"

// BenchmarkTransform runs every implementation on every input in one run,
// so that the ratios in BENCHMARKS.md compare figures taken under the same
// load. Names: BenchmarkTransform/<input>/<implementation>. MB/s is input
// bytes per second of wall-clock time.
//
// Besides the usual figures it reports cpu-MB/s: input bytes per second of
// CPU time used by the whole process (getrusage). On a shared machine, time
// during which other processes hold the cores inflates ns/op but not CPU
// time, so cpu-MB/s and the ratios taken from it hold steadier under load.
func BenchmarkTransform(b *testing.B) {
	for _, in := range Inputs() {
		b.Run(in.Name, func(b *testing.B) {
			for _, im := range Implementations() {
				b.Run(im.Name, func(b *testing.B) {
					b.SetBytes(int64(len(in.Data)))
					b.ReportAllocs()
					cpu0, ok := processCPU()
					for b.Loop() {
						if _, err := im.Transform(in.Data); err != nil {
							b.Fatal(err)
						}
					}
					if cpu1, ok1 := processCPU(); ok && ok1 && cpu1 > cpu0 {
						// b.N is the total number of iterations once b.Loop
						// has returned false.
						b.ReportMetric(float64(len(in.Data))*float64(b.N)/float64(cpu1-cpu0)*1e3, "cpu-MB/s")
					}
				})
			}
		})
	}
}
