package bench

import "testing"

// BenchmarkTransform runs every implementation on every input in one run,
// so that the ratios in BENCHMARKS.md compare figures taken under the same
// load. Names: BenchmarkTransform/<input>/<implementation>. MB/s is input
// bytes per second.
func BenchmarkTransform(b *testing.B) {
	for _, in := range Inputs() {
		b.Run(in.Name, func(b *testing.B) {
			for _, im := range Implementations() {
				b.Run(im.Name, func(b *testing.B) {
					b.SetBytes(int64(len(in.Data)))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := im.Transform(in.Data); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
