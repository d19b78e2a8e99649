//go:build race

package canonical

// raceEnabled is true under the race detector, which makes sync.Pool drop
// items at random, so allocation counts are not meaningful there.
const raceEnabled = true
