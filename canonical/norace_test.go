//go:build !race

package canonical

const raceEnabled = false
