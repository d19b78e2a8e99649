//go:build linux

package ledger

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux platform Go supports).
const clockTick = 10 * time.Millisecond

// serverCPU is the CPU time (user plus system) used so far by the
// PostgreSQL server's processes on this machine: every process named
// "postgres", plus what the postmaster has collected from the backends
// that have exited (cutime, cstime), so that the sum does not drop when
// a connection closes. The benchmarks report it per operation because the
// server does most of a transaction's work and getrusage sees only the
// client. It reads 0 when the server runs elsewhere (or in another PID
// namespace); its resolution is one clock tick per process.
func serverCPU() time.Duration {
	type proc struct {
		ppid                         string
		utime, stime, cutime, cstime int64
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	procs := map[string]proc{}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process has exited
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "postgres" {
			continue
		}
		// After the name: state (field 3), ppid (4), ... utime (14),
		// stime (15), cutime (16), cstime (17) of proc(5).
		f := strings.Fields(s[end+1:])
		if len(f) < 15 {
			continue
		}
		n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
		procs[strings.TrimSpace(s[:open])] = proc{f[1], n(11), n(12), n(13), n(14)}
	}
	var ticks int64
	for _, p := range procs {
		ticks += p.utime + p.stime
		if _, child := procs[p.ppid]; !child {
			// The postmaster: it reaps the backends, so their times
			// live on in its children's times once they exit.
			ticks += p.cutime + p.cstime
		}
	}
	return time.Duration(ticks) * clockTick
}
