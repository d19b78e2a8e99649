// Package idemhttp brings the idempotency ledger to net/http: server
// middleware that runs a handler at most once per idempotency key and
// answers retries with the first response, and client helpers that make and
// send keys and retry safely.
//
// # Server
//
// Middleware has the standard shape, func(http.Handler) http.Handler, so it
// wraps an http.ServeMux, a chi router or a single handler. It reads the
// Idempotency-Key field (draft-ietf-httpapi-idempotency-key-header-06) as
// an RFC 9651 sf-string, accepting Stripe's bare keys too (a bare key is
// the whole field value, never cut at ';'), fingerprints the
// request (method, path with query, content type and body, with
// hash.Request), and claims the key in the ledger in lease mode. The first
// request runs the handler and its answer is stored; a retry gets the
// stored answer with an Idempotent-Replayed: true field; a duplicate that
// arrives while the first still runs gets 409 with Retry-After; a key used
// again for another request gets 422. Options set every part of this
// contract: which methods, whether the key is required, which statuses and
// header fields are stored, the body limit, the refusal format (RFC 9457
// problem documents by default), what to do when the ledger is down. A
// handler marks the point past which it must not run again with Commit,
// and reads the key, scope and fence that protect it with ClaimFrom.
//
// TxHandler is the transactional form, for handlers whose effects are all
// in the ledger's database: the handler's writes, the ledger record and the
// stored answer commit together, which makes the handler run exactly once
// per key.
//
// # Client
//
// NewKey and GenerateKey make random UUID keys, SetKey writes one as an
// sf-string, and Transport, an http.RoundTripper, keys every POST and PATCH
// and retries it with the same key and body on network errors, 409 in
// flight, 429 and 503 (502 and 504 by option), never a replayed answer. Its
// errors are *TransportError, holding the key, so that the caller's own
// retry keeps it. For keys derived from the request's content, see
// hash.DeriveKey.
//
// Neither the key nor the scope is ever logged.
package idemhttp
