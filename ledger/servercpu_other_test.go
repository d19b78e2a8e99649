//go:build !linux

package ledger

import "time"

// serverCPU is not measured off Linux; the server-cpu-ns/op metric then
// reads 0.
func serverCPU() time.Duration { return 0 }
