// Package hash computes the SHA-256 digests that identify payloads and
// requests: digests of raw bytes (Bytes), of canonical JSON (JSON, Value;
// RFC 8785 via package canonical), the request fingerprints that decide
// whether two requests that share an idempotency key are the same operation
// (Request), and idempotency keys derived from stable parts ([DeriveKey]).
//
// Digest layouts that are this package's own (Request, DeriveKey) start with
// a version tag and length-prefix every field, so that no two different
// inputs share an encoding and a future layout never matches an old digest.
//
// The package is usable without the rest of idemledger. All functions are
// safe for concurrent use.
package hash
