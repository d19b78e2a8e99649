// Package hash computes the SHA-256 digests that identify payloads and
// requests: digests of raw bytes, of canonical JSON (RFC 8785), and the
// request fingerprints that decide whether two requests that share an
// idempotency key are the same operation.
//
// The package is usable without the rest of idemledger.
package hash
