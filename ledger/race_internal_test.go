//go:build race

package ledger

// raceEnabled is true under the race detector, which slows allocation
// several times over: TestCacheHeapBound's million records run in the
// tests without it.
const raceEnabled = true
