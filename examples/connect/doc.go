// Package connectexample shows, in tested examples, that idemledger's HTTP
// middleware protects a connect-go unary procedure: a Connect handler is an
// http.Handler, so idemhttp.Middleware wraps it as any other, and a retry
// with the same Idempotency-Key header and the same message gets the stored
// answer (the same response message, or the same Connect error) with the
// Idempotent-Replayed: true header.
//
// What a Connect client (connect.NewClient, Connect protocol) sees of the
// middleware's refusals depends on how they are written. With the default
// refusals (RFC 9457 problem documents, which are no Connect errors) the
// client maps the bare HTTP status as connect-go does:
//
//	refusal                         HTTP   connect.CodeOf(err)
//	key missing (Required), invalid 400    internal
//	key reused with another message 422    unknown
//	in flight                       409    unknown
//	store unavailable               503    unavailable
//
// That loses the reason, so the example's refuse function (connectRefuse)
// writes Connect errors instead, with the codes package idemgrpc chose for
// the same situations: invalid_argument, failed_precondition,
// unavailable for in flight (with Retry-After, so that idemhttp.Transport
// and any retry policy retry it with the same key), unavailable for the
// store, resource_exhausted for a body over the limit, internal for a
// stored answer that is no HTTP answer. A Connect client then reads the
// code and the message as from any Connect server.
//
// What is stored follows idemhttp's default (ShouldStore): Connect errors
// travel with their own HTTP status, so invalid_argument (400), not_found
// (404), failed_precondition (400), permission_denied (403) and
// unauthenticated (401) are stored and replayed, while the codes that map
// to 409, 429 or 5xx (already_exists and aborted among them) release the
// key.
//
// Only the Connect protocol is protected. The gRPC and gRPC-Web protocols
// always answer HTTP 200 and send the status in trailers, which idemhttp
// never stores (a replay could not send them): each retry runs the
// procedure again. Serve gRPC clients through package idemgrpc instead.
//
// The package has no API: the examples are its content.
package connectexample
