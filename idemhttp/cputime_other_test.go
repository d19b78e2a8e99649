//go:build !unix

package idemhttp

import "time"

// processCPU is not measured off unix; the cpu-ns/op metric then reads 0.
func processCPU() time.Duration { return 0 }
