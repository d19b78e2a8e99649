//go:build race

package idemhttp

// raceEnabled is true under the race detector, which slows the SQLite
// engine (transpiled C) several times over: the load test runs smaller then.
const raceEnabled = true
