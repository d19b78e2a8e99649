// Package bench compares the canonical package of idemledger (RFC 8785, the
// JSON Canonicalization Scheme) with other Go canonicalizers, on the same
// inputs and in the same run, and with encoding/json.Compact as the floor:
// no canonicalizer can be expected to beat a pass that only drops
// whitespace.
//
// It is a module of its own so that the peers it measures never enter the
// dependency graph of github.com/idemledger/idemledger. The package holds
// the deterministic input generators (inputs.go) and the list of
// implementations under test (impls.go); the benchmarks, the agreement test
// and the deviation matrix are in the _test.go files. README.md says how to
// run them; BENCHMARKS.md at the repository root holds the figures.
package bench
