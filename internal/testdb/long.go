package testdb

import (
	"os"
	"testing"
)

// LongEnv names the environment variable that runs the long tests in
// full: crash matrices with hundreds of kills, contention between many
// processes, tables filled with hundreds of thousands of rows, long
// model runs. Without it README's test command stays within minutes on a
// small machine, and those tests skip (see Long) or run a shorter form of
// themselves (see [LongRun]); .ci/run sets it, so CI runs them whole.
const LongEnv = "IDEMLEDGER_LONG"

// LongRun reports whether [LongEnv] is set to anything but "" or "0": the
// long tests run in full. A test that keeps a shorter form of itself in
// the default run picks its size with it, and says so in its log.
func LongRun() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}

// Long skips t, naming [LongEnv], unless [LongRun]: the tests whose whole
// point is their length (a scale fill, many processes at once) call it
// first.
func Long(t testing.TB) {
	t.Helper()
	if !LongRun() {
		t.Skip("a long test: set " + LongEnv + "=1 to run it (.ci/run does)")
	}
}
