// Package idemconnect protects connect-go unary procedures with an
// idemledger ledger: a call with an Idempotency-Key header runs the
// procedure once, and every retry with the same key and message gets the
// first answer back (the same response message, or the same Connect error
// with its details), whichever of the three protocols a connect-go handler
// serves carried it (Connect, gRPC, gRPC-Web).
//
// # Server
//
// NewInterceptor returns a connect.Interceptor for connect.WithInterceptors
// on the handler (or on every handler of a service). For a unary call it
// reads the key from the Idempotency-Key request header (the HTTP header
// for the Connect protocol, the metadata entry idempotency-key for gRPC and
// gRPC-Web: the same header on the wire), quoted or bare as package idemhttp
// reads it; the scope from Options.Scope; and the fingerprint from the
// decoded request message in deterministic protobuf encoding, as package
// idemgrpc takes it. Deterministic encoding writes map entries in key order:
// a connect-go client's binary codec does not (proto.Marshal), so the bytes
// of two sends of one message with a map field (google.protobuf.Struct, any
// map<…>) differ, and a fingerprint of the raw body would refuse the
// client's own retry as key reuse. The record has idemgrpc's layout, so a
// connect-go server and a grpc-go server protected by idemgrpc answer a
// key alike from one ledger.
//
//	situation                                 code                 ErrorInfo reason (domain "idemledger")
//	no key                                    the procedure runs unprotected (Options.Required: invalid_argument)
//	invalid key                               invalid_argument     IDEMPOTENCY_KEY_INVALID
//	first call with the key                   the procedure's answer, stored when Options.ShouldStore says so
//	same key while the first runs             unavailable          IDEMPOTENCY_KEY_IN_FLIGHT, RetryInfo and Retry-After
//	  ... with Options.Wait                   the first answer once stored; unavailable at the budget's end
//	same key and message, completed           the stored answer, with Idempotent-Replayed: true
//	same key, other procedure or message      failed_precondition  IDEMPOTENCY_KEY_REUSED
//	first call passed its commit point,       data_loss            IDEMPOTENCY_OUTCOME_NOT_STORED
//	then vanished
//	answer too large to store (replays)       data_loss            IDEMPOTENCY_OUTCOME_TOO_LARGE
//	store busy                                unavailable          IDEMPOTENCY_STORE_BUSY, RetryInfo
//	store unreachable or not migrated         unavailable          IDEMPOTENCY_STORE_UNAVAILABLE (FailOpen: runs unprotected, unless not migrated)
//
// The codes are idemgrpc's, for the reasons its package doc gives: a client
// retries unavailable with the same key, never failed_precondition or
// data_loss. A replayed error carries Idempotent-Replayed: true in its
// metadata; the client interceptor never retries it.
//
// With Options.Wait set, a duplicate that finds its key in flight is not
// refused at once: it polls the record (every few milliseconds at first,
// then every 50 to 100 ms) and is answered the first call's answer,
// marked replayed, within a poll of its being stored; it runs the
// procedure itself when the first call releases the key; it gets the
// in-flight unavailable when the budget or its own deadline ends first.
// A client with no retries at all then ends with the first answer. A
// waiting call holds its connection and makes a claim on the store at
// each poll: keep Wait below the deadlines and timeouts between the
// client and the server (the call's deadline, an HTTP client's Timeout, a
// proxy's), so that a duplicate hears "come back" rather than
// deadline_exceeded.
//
// Commit marks the commit point inside a procedure, as idemgrpc.Commit
// does: from then on its answer is stored whatever its code, and the mark
// is written into the record, so that a crash before the answer is stored
// is answered data_loss instead of a second run (or, with Options.Recover,
// a run that knows it: Recovered).
//
// A replayed response is sent as a dynamicpb.Message of the response's
// type: the bytes on the wire are the stored message's, but an interceptor
// placed outside this one sees that type in AnyResponse.Any(), not the
// generated one.
//
// # Client
//
// NewClientInterceptor gives each unary call a fresh key when its request
// has none and retries unavailable with the same key and message, after the
// RetryInfo delay when the server sent one, within ClientOptions' bounds
// and the call's deadline; never a replayed answer, never another code.
//
// # Events
//
// Options.Observer receives the events of idemgrpc's table (claimed,
// committed, stored, released, replayed, in flight, key reused, lease
// lost, store busy, store unavailable, outcome unknown), with Method and
// Route the procedure and Status the Connect code (0 for success).
//
// # Lease loss
//
// As in idemgrpc (see its Lease loss section): the procedure's context is
// cancelled with a cause matching ledger.ErrLeaseLost when the lease runs
// out with no extension confirmed or is found taken over, and Commit then
// returns false. Just before the effect, stop if context.Cause(ctx)
// matches ledger.ErrLeaseLost (not on ctx.Err() alone, which the client's
// deadline sets too), make the effect
// under context.WithoutCancel(ctx) with a deadline of its own, and answer
// unavailable when Commit returns false.
package idemconnect
