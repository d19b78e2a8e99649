// Package idemgrpc makes unary gRPC calls run at most once per idempotency
// key, with a server interceptor that claims the key in an idemledger
// ledger and replays the first outcome, and a client interceptor that gives
// calls a key and retries them with it.
//
// It is a Go module of its own (github.com/idemledger/idemledger/idemgrpc),
// so that google.golang.org/grpc stays out of the main module's go.mod.
//
// # Server
//
// UnaryServerInterceptor reads the key from the "idempotency-key" metadata
// (MetadataKey): the whole value, as sent, of printable ASCII, from 1 byte
// to the ledger's MaxKeyLength (ledger.Options.MaxKeyLength, by default
// ledger.DefaultMaxKeyLength; the interceptor has no setting of its own). A
// longer key is refused with INVALID_ARGUMENT, "longer than the maximum
// length", whatever that limit is. The fingerprint (see Fingerprint) covers
// the full method name and the request message's deterministic protobuf
// encoding, so a retry must call the same method with the same message. It
// works in the ledger's lease mode: claim, run the handler, then store the
// outcome (Complete) or give the key back (Release). The outcome stored is
// the response message (its type and its bytes) or the status (code, message
// and details); a replay answers the same message or the same status, and
// sets the header metadata "idempotent-replayed: true" (ReplayedKey).
//
// The answers, with the codes chosen and why:
//
//	situation                                 code                 ErrorInfo reason
//	no key                                    handler unprotected  -
//	no key, ServerOptions.Required            INVALID_ARGUMENT     IDEMPOTENCY_KEY_MISSING
//	empty, over-long, non-ASCII or repeated   INVALID_ARGUMENT     IDEMPOTENCY_KEY_INVALID
//	Scope fails                               its status, else     IDEMPOTENCY_SCOPE
//	                                          INVALID_ARGUMENT
//	first call with the key                   the handler's answer, stored when ShouldStore
//	same key while the first runs             UNAVAILABLE          IDEMPOTENCY_KEY_IN_FLIGHT, RetryInfo
//	  ... with ServerOptions.Wait             the first answer once stored; UNAVAILABLE at the budget's end
//	same key and request, completed           the stored answer, and idempotent-replayed: true
//	same key, other method or message         FAILED_PRECONDITION  IDEMPOTENCY_KEY_REUSED
//	store busy (SQLite lock, serialization)   UNAVAILABLE          IDEMPOTENCY_STORE_BUSY, RetryInfo
//	store unreachable                         UNAVAILABLE          IDEMPOTENCY_STORE_UNAVAILABLE
//	                                          (or the handler unprotected with FailOpen)
//	ledger not migrated (ErrNotMigrated)      UNAVAILABLE          IDEMPOTENCY_STORE_UNAVAILABLE, even with FailOpen
//	stored outcome is not a gRPC answer       INTERNAL             IDEMPOTENCY_STORED_OUTCOME
//	answer too large to store (replays)       DATA_LOSS            IDEMPOTENCY_OUTCOME_TOO_LARGE
//	first call passed its commit point, then  DATA_LOSS            IDEMPOTENCY_OUTCOME_NOT_STORED
//	vanished (ledger.ErrCommitted)            (or the handler runs again with Recover)
//
// Every refusal carries a google.rpc.ErrorInfo detail with the reason
// above and the domain ErrorDomain, so that clients branch on the reason,
// not on the message. Refusals never create or complete a record.
//
// Why these codes. gRPC's status code guide gives a litmus test: use
// UNAVAILABLE when the client can retry just the failing call, ABORTED when
// it should retry at a higher level (restart a read-modify-write), and
// FAILED_PRECONDITION when it should not retry until the system's state is
// fixed; INVALID_ARGUMENT is for arguments that are wrong whatever the
// state of the system.
//
//   - In flight: the same call, unchanged and with the same key, is exactly
//     what should be retried once the first finishes, and it will then be
//     answered from the record: UNAVAILABLE, with a RetryInfo delay. It is
//     also the code that gRPC's own retry policy (retryableStatusCodes)
//     and most client middleware retry by default, and retrying it is safe
//     precisely because the key is sent again. ABORTED (HTTP's 409, which
//     package idemhttp answers) would tell the client to restart a larger
//     sequence, which is not needed, and is retried by nothing by default.
//     With ServerOptions.Wait the duplicate is not refused at first: it
//     waits for the first call's answer (see Waiting duplicates).
//   - Key reused: the key's record exists with another request. The same
//     call retried will fail the same way until the record expires, so
//     it is not retryable; it depends on the system's state (the same
//     message with a fresh key succeeds), so it is not INVALID_ARGUMENT:
//     FAILED_PRECONDITION. ALREADY_EXISTS would wrongly say the resource
//     the client wanted exists.
//   - Malformed or missing key: wrong whatever the state: INVALID_ARGUMENT.
//   - Store busy or unreachable: a transient failure of a dependency, and
//     the call may be retried as it is (nothing ran): UNAVAILABLE.
//   - A stored outcome that cannot be decoded (another kind of record
//     under the same key, or a response type the server no longer knows):
//     a broken invariant of the server: INTERNAL.
//   - An answer too large to store: the handler ran and its effect
//     happened, but its answer is lost for retries. Running it again could
//     repeat the effect, so a marker is stored instead and retries get
//     DATA_LOSS ("unrecoverable data loss"), which no client retries.
//   - A first call that passed its commit point (Commit) and vanished
//     before its answer was stored (its process died): the same case as an
//     answer too large to store, the effect made and the answer lost, so
//     the same code, DATA_LOSS, with its own reason. FAILED_PRECONDITION
//     would say the client could fix something and retry; nothing the
//     client does brings the answer back.
//
// Google's AIP-155 asks that a duplicate request return the response of
// the earlier successful one, since the client most likely did not receive
// it; that is the replay above. AIP-155 carries the request ID in a
// request_id field of the message; here the key travels in metadata, so the
// interceptor serves every method without changing its messages.
//
// What is stored: by default (StoreDefault) OK and the answers that a
// retry would only repeat (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
// PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED,
// UNAUTHENTICATED); the transient ones (CANCELLED, UNKNOWN,
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNAVAILABLE,
// DATA_LOSS) release the key, so that a retry runs the handler again. This
// mirrors idemhttp's default, which stores statuses under 500 except 408,
// 409, 425 and 429. A handler that panics releases its key too, and the
// panic goes on: put a recovery interceptor outside this one, since
// grpc-go does not recover panics.
//
// A handler that has made its irreversible effect (charged the card) calls
// Commit(ctx): from then on its failure is stored and replayed whatever
// ShouldStore says, and a panic is stored as INTERNAL, so that a retrying
// client cannot run the effect twice.
//
// While the handler runs, its lease is extended every third of the lease
// (the ledger's Extend), so a handler slower than the lease keeps its key.
// The outcome is written with a context that the client's cancellation does
// not end.
//
// # Lease loss
//
// The handler's context is cancelled, with a cause that matches
// ledger.ErrLeaseLost (context.Cause), when the lease runs out with no
// extension confirmed (the store locked or unreachable for a whole lease),
// and when an extension or Commit finds the key taken over; Commit then
// returns false. A retry may be running the handler again by then: just
// before the effect, stop if context.Cause(ctx) matches
// ledger.ErrLeaseLost (not on ctx.Err() alone: the context also ends at
// the client's deadline, and a run that stopped then would release its
// key, so that a handler slower than the deadline would never finish),
// make the effect itself under context.WithoutCancel(ctx) with a deadline
// of its own (a client's cancellation must not cut it in the middle),
// forward the key, and when Commit returns false answer UNAVAILABLE, so
// that the client's retry gets the outcome of the run that owns the key. The cancellation for a lease
// that ran out unconfirmed may be a false alarm (the late extension
// lands, and Commit returns true): stopping then costs a retry, never a
// second effect. Past a written commit mark only a takeover found cancels.
//
// # Events
//
// ServerOptions.Observer (a ledger.Observer; nil, the default, reports
// nothing) receives the events of protected calls, the hook that
// idemledger's protection layers share: ledger.LogObserver writes them with
// slog, package idemotel (a module of its own) records them as
// OpenTelemetry metrics, and ledger.Observers feeds several. Every event
// has Method and Route set to the full method name
// ("/package.Service/Method"), and Duration, the time since the
// interceptor began its work on the call. Status is the gRPC code, as an
// int, of the answer the call gets; 0 is OK, and it is also 0 where the
// event comes before any answer (claimed, a failed extension, fail open)
// and after a panic before the commit point. The events, in the order a
// call reports them:
//
//	event              Reason or Op             Status               when
//	claimed            -                        0                    the claim won: the handler runs
//	stored             -                        the answer's         the answer was stored
//	stored             panic                    INTERNAL             a panic after the commit point, stored
//	stored             error or status (1)      the answer's         a code ShouldStore refuses, stored after the commit point
//	stored             oversized                the answer's         over MaxOutcomeBytes: a DATA_LOSS marker stored
//	stored             error                    OK                   the response is no protobuf message: a DATA_LOSS marker stored
//	released           panic                    0                    a panic before the commit point
//	released           error or status (1)      the answer's         a code ShouldStore refuses
//	replayed           -                        the stored answer's  answered from the record
//	in_flight          -                        UNAVAILABLE          the key's first call still runs
//	key_reused         -                        FAILED_PRECONDITION  the key came with another call
//	committed          -                        0                    Commit wrote the mark into the record
//	lease_lost         Op extend, commit        the answer's (2)     another call took the key over, or (Op extend) the
//	                   or complete                                   lease ran out with no extension confirmed
//	store_busy         Op claim, commit,        the answer's (2)     the store stayed locked (ledger.ErrRetryable)
//	                   complete, release
//	                   or extend
//	store_unavailable  Op claim, commit,        the answer's (2)     the store failed otherwise
//	                   complete, release
//	                   or extend
//	outcome_unknown    Op claim, commit,        the answer's (2)     the connection broke after the statement may have
//	                   complete, release                             run, and retries within the lease did not settle it
//	                   or extend
//
// (1) Reason error when the handler returned an error, status when it
// returned OK and ShouldStore refuses OK. (2) A failed claim is answered
// UNAVAILABLE, or runs the handler unprotected with FailOpen (Status 0);
// a failed extension has no answer yet (Status 0). A Release that finds
// its lease lost reports lease_lost with Op "release".
//
// A failed Complete or Release reports its failure instead of stored or
// released. The heartbeat goes on after a failed extension unless the
// lease is lost. Refusals of the key or the scope, and a stored record
// that is not a gRPC answer, report nothing.
//
// The failures (lease_lost, store_busy, store_unavailable,
// outcome_unknown, and stored for
// a response that is no protobuf message) carry Err, the cause, with every
// whole-word occurrence of the key and of the scope in its text, whatever
// their length, replaced by "[redacted]": the ledger never quotes them,
// but a database driver's message may. errors.Is still matches the
// cause's chain (ledger.ErrLeaseLost, ledger.ErrRetryable); errors.As
// and Unwrap do not reach it, since a driver's typed error may hold the
// key in a field. Other events have no Err. The key and the scope are in
// no event.
//
// Observe is called synchronously, on the call's goroutine (the
// heartbeat's for a failed extension), before the answer is sent: it must
// be quick.
//
// # Client
//
// UnaryClientInterceptor gives each call a fresh key (a random UUID) when
// its outgoing metadata has none, and retries a call that failed with
// UNAVAILABLE with the same key and the same message: after the RetryInfo
// delay when the server sent one, otherwise a capped exponential backoff
// with jitter, within ClientOptions' bounds and the call's deadline. Any
// other code is final. A failed call returns a *CallError, which holds the
// key (to retry later, or to look the record up) and keeps the last
// attempt's status reachable with status.FromError and status.Code.
//
// The defaults ride out short waits: a duplicate sent while the first call
// with its key still runs, a store busy for a moment, a connection being
// re-established. Against the server's in-flight answer, whose RetryInfo
// delay is at most ServerOptions.InFlightRetryAfter (1 s by default), the
// five attempts are spent about 4 s after the first, long before
// MaxElapsed.
//
// They do not ride out a server that crashed while its handler ran. Its
// call stored and released nothing, so the key stays in flight until the
// ledger's lease runs out (ledger.Options.Lease, 1 minute by default,
// counted from the claim or the heartbeat's last extension), and the call
// fails with a *CallError: UNAVAILABLE, reason IDEMPOTENCY_KEY_IN_FLIGHT.
// Once the lease has run out, a retry with the same key and message takes
// the key over. For one call to last that long it needs MaxAttempts of at
// least Lease / InFlightRetryAfter + 2 (62 with the defaults), MaxElapsed
// longer than the lease plus the time the handler may have run before the
// crash, and a call deadline past both, or none. InitialBackoff and
// MaxBackoff do not stretch these waits (the server's RetryInfo takes the
// place of the backoff); a longer ServerOptions.InFlightRetryAfter does.
// Otherwise keep CallError.Key and retry later with it, never with a fresh
// key: the first run may have finished, and a fresh key runs the handler
// again.
//
// The interceptor never retries an answer the server marked as replayed
// (ReplayedKey): a stored UNAVAILABLE, say, is the first call's answer, and
// retrying it would only repeat it.
//
// # Retries by grpc-go's own policy
//
// A client may rely on gRPC's retry policy (a service config with a
// retryPolicy listing UNAVAILABLE) instead of this interceptor. That policy
// reads no RetryInfo detail; it waits as long as the grpc-retry-pushback-ms
// trailer says (gRFC A6), which the server interceptor sets on its in-flight
// answer (PushbackKey) to the same delay as the RetryInfo, so duplicates of
// a slow call wait for it instead of spending their attempts at once
// (TestGRPCRetryPolicyWaitsForInFlight). Two caveats of that policy:
// MaxAttempts is capped at 5 by grpc-go, so it outlasts a first call of at
// most about 4 × InFlightRetryAfter; and it retries only an answer that
// sent no header metadata ("trailers-only"), so a server interceptor that
// sets response headers (grpc.SetHeader, grpc.SendHeader) before this one
// answers turns every in-flight answer into a final failure. Keep such
// interceptors from sending headers on refusals, or use this package's
// client interceptor, which has neither limit, or let the server wait.
//
// # Waiting duplicates
//
// With ServerOptions.Wait set, a duplicate that finds its key in flight
// is not refused at once: it polls the record (every few milliseconds at
// first, then every 50 to 100 ms) and is answered the first call's
// answer, marked replayed, within a poll of its being stored; it runs the
// handler itself when the first call releases the key; it gets the
// in-flight UNAVAILABLE when the budget or its own deadline ends first.
// A client then needs no retries to end with the first answer, whatever
// its policy: eight duplicates of a call that outlasts grpc-go's retry
// policy all end with its answer, in one attempt each
// (TestGRPCRetryPolicyWithWait). A waiting call holds its stream and makes
// a claim on the store at each poll: keep Wait below the call deadlines
// clients set, so that a duplicate hears "come back" (UNAVAILABLE with
// RetryInfo) rather than DEADLINE_EXCEEDED, which neither this package's
// client interceptor nor a retry policy listing UNAVAILABLE retries.
//
// # Ledger
//
// The interceptor talks to the ledger through the small Ledger interface
// (Claim, Complete, Release, Extend, Lease, MaxKeyLength), whose methods
// take no database: a ledger that holds its database satisfies it
// directly.
package idemgrpc
