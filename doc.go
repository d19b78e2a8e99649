// Package idemledger is the root of a library that makes a mutation run at
// most once per idempotency key and answers every retry with the first
// outcome: the Idempotency-Key pattern of the IETF httpapi draft
// (draft-ietf-httpapi-idempotency-key-header) and of Stripe's API.
//
// The root package holds no code. The library lives in its subpackages:
//
//   - canonical: RFC 8785 JSON Canonicalization Scheme, usable on its own.
//   - hash: SHA-256 digests of canonical JSON, raw bytes and HTTP requests.
//   - ledger: the ledger itself (Claim, Complete, Release, Extend, Purge,
//     Get, Stats) and Mutate, which runs a mutation inside the caller's
//     transaction.
//   - idemhttp: net/http middleware and client helpers.
//   - schema: the embedded migrations, applied with golang-migrate.
//   - driver: the boundary between the ledger and a database, which one
//     package per engine and database library implements (README.md lists
//     them; each one's documentation says what its engine does).
//
// The command idemledger (cmd/idemledger) runs a demonstration and
// administers a ledger: canon, hash, migrate, purge, stats, inspect.
package idemledger
