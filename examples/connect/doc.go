// Package connectexample shows, in a tested example, a connect-go unary
// procedure protected by package idemconnect: the server interceptor runs
// the procedure once per Idempotency-Key and replays its answer to every
// retry, on the Connect, gRPC and gRPC-Web protocols alike; the client
// interceptor adds a key and retries unavailable answers with it.
//
// An earlier version of this example put idemhttp.Middleware in front of
// the Connect handler. That stores nothing of gRPC-protocol calls (their
// status travels in trailers), fingerprints the raw body (so the client's
// own retry of a message with a map field was refused as key reuse, since
// connect-go's binary codec writes map entries in random order), and
// needed a hand-written mapping of refusals to Connect codes. idemconnect
// fingerprints the decoded message and answers with Connect errors itself.
//
// The package has no API: the example is its content.
package connectexample
