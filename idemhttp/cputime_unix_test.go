//go:build unix

package idemhttp

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user plus system) the process has used so
// far, from getrusage(2). Benchmarks report it per operation because the
// wall clock on a shared machine measures the neighbours too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
