//go:build unix

package bench

import "syscall"

// processCPU returns the user plus system CPU time this process has used,
// in nanoseconds: the benchmark goroutine and the garbage collector's
// workers alike, so allocation-heavy code pays for its collections.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
