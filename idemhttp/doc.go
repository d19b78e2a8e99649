// Package idemhttp brings the idempotency ledger to net/http: server
// middleware that runs a handler at most once per idempotency key and
// answers retries with the first response, and client helpers that make and
// send keys and retry safely.
//
// # Server
//
// [Middleware] has the standard shape, func(http.Handler) http.Handler, so
// it wraps an http.ServeMux, a chi router or a single handler. It reads the
// Idempotency-Key field (draft-ietf-httpapi-idempotency-key-header-06) as
// an RFC 9651 sf-string, accepting Stripe's bare keys too (a bare key is
// the whole field value, never cut at ';'), fingerprints the request
// (method, path with query, content type and body, with hash.Request), and
// claims the key in the ledger in lease mode (ledger.Ledger.Claim), in its
// own short transaction on the ledger's database. The first request runs
// the handler and its answer is stored; a retry gets the stored answer
// with an Idempotent-Replayed: true field; a duplicate that arrives while
// the first still runs gets 409 with Retry-After, or waits for the first
// answer ([Options.Wait]: see Duplicates); a key used again for another
// request gets 422. [Options] set every part of this contract:
// which methods, whether the key is required, which statuses and header
// fields are stored, the body limit, the refusal format (RFC 9457 problem
// documents by default), what to do when the ledger is down, and the
// observer of the events. The longest key accepted is the ledger's
// (ledger.Options.MaxKeyLength). A handler marks the point past which it
// must not run again with [Commit], and reads the key, scope and fence
// that protect it with [ClaimFrom].
//
// [TxHandler] is the transactional form, for handlers whose effects are
// all in the ledger's database: the handler's writes, the ledger record and
// the stored answer commit together, which makes the handler run exactly
// once per key.
//
// # Answers
//
// For a request whose method is in [Options.Methods] and that carries a key,
// Middleware answers:
//
//	malformed, empty or over-long key, two key lines   400 (CodeKeyInvalid)
//	no key, Options.Required                           400 (CodeKeyMissing)
//	Scope fails, or returns what the ledger refuses    400, or a *ScopeError's status (CodeScope)
//	body longer than MaxBodyBytes                      413 (CodeBodyTooLarge)
//	first request with the key                         the handler's answer, stored if ShouldStore
//	same key while the first runs                      409 with Retry-After (CodeInFlight), at once
//	  ... with Options.Wait                            the first answer once stored; 409 at the budget's end
//	same key and fingerprint, completed                the stored answer, plus ReplayHeader: true
//	  ... stored by ledger.Mutate, not an HTTP answer  500 (CodeStoredOutcome)
//	  ... an answer too large to keep (a marker)       410 (CodeOutcomeNotStored), plus ReplayHeader: true
//	same key, other method, target or body             422 (CodeKeyReused)
//	store busy (ledger.ErrRetryable: a lock held      503 with Retry-After (CodeBusy)
//	  past busy_timeout, a serialization failure)
//	ledger unreachable                                 503 (CodeUnavailable), or the handler unprotected with FailOpen
//	ledger not migrated (ledger.ErrNotMigrated)        503 (CodeUnavailable), even with FailOpen
//
// A request without a key and without Required, or with another method,
// goes to the handler unprotected. The middleware's refusals never create
// or complete a record.
//
// # Duplicates
//
// By default a duplicate that arrives while the key's first request runs
// is answered 409 with Retry-After at once, and its client must come
// back. Many retrying clients at their default settings do not come back
// long enough for a slow handler: go-retryablehttp and curl --retry do
// not retry a 409 at all, stripe-go spends its two retries in about
// 1.5 s. With [Options].Wait set, the duplicate waits for the first
// request instead: it polls the record (every few milliseconds at first,
// then every 50 to 100 ms) and is answered the first answer, marked
// replayed, within a poll of its being stored (BENCHMARKS.md, "Waiting
// duplicates", has the added latency). When the first request releases
// the key (its handler failed before its commit point), the duplicate
// runs the handler itself; when the budget or the request's context ends
// first, it gets the 409.
//
// A waiting duplicate holds its connection and its client's attempt, and
// makes a claim on the store at each poll. Set Wait longer than the
// handlers usually take, and shorter than the shortest per-attempt timeout
// between the client and the handler (a load balancer's idle or request
// timeout, idemclient.Transport.AttemptTimeout, stripe-go's 80 s): a
// duplicate cut by such a timeout learns less than a 409 would have told
// it. Under Wait the refusals that say "come back" (409 at the budget,
// 503 busy) and the final ones (410, 422, 400) keep their meaning, so a
// client that retries only the former (curl --retry with
// --retry-connrefused retries 429 and 503, never 400, 409, 410 or 422)
// ends with the first answer or a final one.
//
// # Storing
//
// The handler's answer is sent to the client as it is written, and a copy
// is kept. The claim is released, so that a retry runs the handler again,
// when the handler panics (the panic goes on), when ShouldStore rejects the
// status, and when the handler flushes, hijacks the connection or
// announces trailers. An answer longer than MaxBodyBytes reaches the
// client whole but is not stored: a marker keeps the key (retries get 410,
// [CodeOutcomeNotStored]), unless ReleaseOversized is set. A handler whose
// effect cannot be undone marks its commit point with [Commit] once the
// effect is made: from then on none of these endings releases the key, and
// retries replay what was stored (a panic as a 500 problem document).
// Completion and release use a context that the client's disconnect does
// not cancel (context.WithoutCancel), bounded by the ledger's lease, so a
// client that hangs up does not lose its outcome.
//
// # Leases and the heartbeat
//
// While the handler runs, its lease is extended every third of the lease
// (ledger.Ledger.Extend), so a handler slower than the lease keeps its
// key. A failed extension (a busy or unreachable store) is tried again
// after a ninth of the lease; only ledger.ErrLeaseLost ends the extensions.
// A lease guards the key only while the store can be reached to extend it:
// when extensions fail for longer than the lease, a retry that reaches the
// store first takes the key over and runs the handler again (the first
// run's completion then fails with ledger.ErrLeaseLost, reported as
// lease_lost). Choose ledger.Options.Lease longer than the store outages
// the service must ride out.
//
// # Lease loss
//
// The handler hears of a lost lease through its request's context: it is
// cancelled, with a cause that matches ledger.ErrLeaseLost
// (context.Cause), as soon as the Middleware knows that a retry may be
// running the handler again: when an extension finds the key taken over,
// when the lease runs out with no extension confirmed (a store locked or
// unreachable for a whole lease: lease_lost, Op extend), and when Commit
// finds the lease gone (Commit then returns false). Just before the
// effect, stop if the context's cause matches ledger.ErrLeaseLost (see
// Timeouts for why the effect itself runs under context.WithoutCancel),
// so that a run that lost its key stops before the effect instead of
// repeating the retry's. Test the cause, not ctx.Err(): the context also
// ends when the client hangs up or an http.TimeoutHandler outside fires,
// and a run that stopped then would release the key, so that a handler
// slower than the client's timeout would never finish.
// Commit waits out a store that blocks past the lease (it keeps trying to
// write the mark: see [lifecycle.Run.Commit]). When it returns false after
// the effect, another run took the key over, or the store stayed out of
// reach for [lifecycle.CommitPatience] leases: the answer will not be
// stored, so answer 503 with Retry-After rather than the effect's result,
// and clients end with the stored outcome.
// A cancellation because the lease ran out unconfirmed may be a false
// alarm (nobody took the key, the late extension lands and Commit returns
// true): stopping then costs a retry, not a second effect. Past a written
// commit mark the record is not taken over as if nothing had happened, so
// only a takeover found by an extension or by Commit cancels the context
// then. The fence ([Claim.Fence]) remains the guard for writes that land
// after the check.
//
// # Timeouts
//
// Put http.TimeoutHandler outside the middleware, never inside it:
// http.TimeoutHandler(Middleware(...)(h), d). Outside, the client gets the
// timeout's 503 while the handler goes on under its claim, and retries get
// 409 in flight and then the stored answer. Inside, the middleware sees the
// timeout's 503 as the handler's answer and releases the key while the
// handler still runs, so a retry runs it a second time; a commit point
// cannot help, as the release comes first.
//
// The request's context ends when the client hangs up, as a Transport
// attempt that times out does. An outside call made under r.Context()
// alone is then cut in the middle, the handler answers an error, the key
// is released, and the retry makes the call again. Just before the call,
// stop only if the lease was lost (context.Cause matches
// ledger.ErrLeaseLost: see Lease loss), make the call under
// context.WithoutCancel(r.Context()) with a deadline of its own, forward
// the key (ClaimFrom), and mark the commit point after it (Example
// (OutsideCall)).
//
// # Transactional handlers
//
// [TxHandler] begins a transaction on the ledger's database (through the
// ledger's driver), runs the [TxFunc] inside ledger.MutateOutcomeCommit, so
// that the claim, fn's writes and the stored response share one savepoint,
// and commits (on pgxv5, BEGIN travels with the claim and COMMIT with the
// stored response: the round trips of a plain transaction). A retry after the commit gets the stored response; a retry after
// a crash or rollback finds no record and runs fn again, with none of the
// first attempt's writes left behind. The stored response is a
// ledger.Outcome as Middleware stores it, so a key may move between the two
// forms, in a rolling deployment for instance: a retry replays the answer
// that the other form stored. Under a Middleware (a route of a ServeMux
// that the middleware wraps), TxHandler records its transaction under a key
// derived from the middleware's, so that both work and the route keeps
// exactly once for its database effects.
//
// fn's response is buffered and sent only after the commit, so a client
// never sees an answer whose effects were then lost. Flush and Hijack are
// not supported (http.ResponseController reports http.ErrNotSupported). fn
// reads the key and the scope with [ClaimFrom] (Fence 0: the transaction
// guards fn's writes). [Commit] does not change TxHandler's own record,
// whose writes commit or vanish with the transaction; under a Middleware it
// marks the Middleware's claim. The key, the scope, the fingerprint and the
// refusals are as for Middleware, with these differences:
//
//   - The transaction commits when ShouldStore accepts the status, and is
//     rolled back otherwise (fn's writes vanish with the claim, and the
//     client gets fn's answer). Requests that pass through unprotected (no
//     key, or a method outside Methods) follow the same rule, without the
//     ledger.
//   - A response longer than MaxBodyBytes is more than TxHandler holds
//     back until its commit (and stores), so the transaction is rolled back
//     and the client gets 500 (CodeResponseTooLarge), also on a request
//     without a key: raise the limit for such handlers.
//   - A concurrent duplicate waits for the first transaction (SQLite's
//     write lock; on PostgreSQL and MySQL the lock on the key's row) and
//     then replays, rather than answering 409; 409 remains for a key held
//     by a lease-mode claim. Each waiting duplicate holds a connection of
//     the pool while it waits, so a burst of duplicates of one slow request
//     can leave other keys waiting for a connection; its client hanging up
//     does not free it. Bound the wait: SQLite's busy timeout does;
//     on PostgreSQL set lock_timeout (a connection parameter, for example
//     lock_timeout=1000 in the URL, in milliseconds), on MySQL
//     innodb_lock_wait_timeout (50 s by default). A duplicate that waits
//     longer gets 503 busy (CodeBusy, with Retry-After).
//   - On SQLite, fn's whole run holds the database's write lock, for every
//     process that opens the file: every other TxHandler request, every
//     Middleware claim and completion, and every other writer wait for it,
//     and those that wait past busy_timeout get 503 busy. Keep fn short (no
//     calls to other services inside it), or use PostgreSQL, whose locks
//     are per row.
//   - FailurePolicy does not apply: the ledger and fn's effects live in the
//     same database, so when one is unreachable so is the other, and the
//     answer is 503. A transaction that fails after fn ran is 503 too,
//     rolled back with nothing kept: a failed commit, fn ending the
//     transaction itself, or, on PostgreSQL, a statement of fn's that
//     failed and whose error fn ignored (the transaction is then aborted
//     and the answer cannot be stored). The event (Options.Observer, Kind
//     released, Reason error) carries the error.
//
// The transaction begins and commits with a context the client's
// disconnect does not cancel; fn should use r.Context() for its own
// statements if it wants them to stop when the client goes. If fn panics
// the transaction is rolled back and the panic goes on.
//
// A retry of a completed record, a key held by a lease-mode claim and a
// reused key are answered from a plain read: on SQLite before BEGIN, so a
// replay never waits for the write lock; on PostgreSQL the claim inside the
// transaction writes nothing for them.
//
// # Events
//
// [Options.Observer] (a ledger.Observer; nil, the default, reports nothing)
// receives the events of protected requests, the hook that idemledger's
// protection layers share: ledger.LogObserver writes them with slog,
// package idemotel (a module of its own) records them as OpenTelemetry
// metrics, and ledger.Observers feeds several. Every event has Method, the
// request's method; Route, the route pattern (http.Request.Pattern as the
// ServeMux set it for the middleware's route, or the pattern of the
// *http.ServeMux that the middleware wraps, else empty: never the raw
// path, which would make a metric series per id); and Duration, the time
// since the middleware began its work on the request ([Options.Now]).
// Status is the status the client is answered with; it is 0 where the event
// comes before any answer (claimed, a failed extension, fail open) and
// after a panic before the commit point. The events, in the order a request
// reports them:
//
//	event              Reason or Op                 Status            when
//	claimed            -                            0                 the claim won: the handler runs
//	committed          -                            0                 the handler's Commit was written into the record
//	stored             -                            the answer's      the answer was stored
//	stored             oversized                    the answer's      too long to store: a marker kept (410 for retries)
//	stored             panic                        500               a panic after the commit point, stored
//	stored             status or flush              the answer's      an answer that would release the key, stored after the commit point
//	released           panic                        0                 a panic before the commit point
//	released           status, flush or oversized   the answer's      ShouldStore refused the status; flushed, hijacked or
//	                                                                  with trailers (flush); over MaxBodyBytes with ReleaseOversized
//	replayed           -                            the answer's      answered from the record (410 for a marker, 500 for a
//	                                                                  record that is no HTTP answer, 410 for a first
//	                                                                  request that passed its commit point and vanished)
//	in_flight          -                            409               the key's first request still runs
//	key_reused         -                            422               the key came with another request
//	lease_lost         Op extend, commit, complete  the answer's (1)  another request took the key over, or (Op extend) the
//	                   or release                                     lease ran out before an extension was confirmed
//	store_busy         Op claim, commit, complete,  the answer's (1)  the store stayed locked past its busy timeout
//	                   release or extend
//	store_unavailable  Op claim, commit, complete,  the answer's (1)  the store failed otherwise
//	                   release or extend
//	outcome_unknown    Op claim, commit, complete,  the answer's (1)  the connection broke after the statement may have
//	                   release or extend                              run, and retries within the lease did not settle it
//
// (1) A failed claim is answered 503, or runs the handler unprotected with
// [FailOpen] (Status 0); a failed extension has no answer yet (Status 0). A
// failed Complete or Release reports its failure instead of stored or
// released; the heartbeat goes on after a failed extension unless the
// lease is lost.
//
// TxHandler reports claimed when its claim wins and fn runs, then stored
// once the transaction commits, or released when it is rolled back: Reason
// status (ShouldStore refused the status), oversized (Status 500, the
// answer [CodeResponseTooLarge]), panic, or error when the transaction failed
// after fn ran (storing the answer, or the commit, failed; Status 503).
// A claim that loses reports replayed, in_flight or key_reused as under
// Middleware; a transaction that cannot begin reports store_busy or
// store_unavailable with Op claim. Under a Middleware both layers report,
// each to its own Options.Observer.
//
// The failures (lease_lost, store_busy, store_unavailable, and released
// with Reason error) carry Err, the cause, with every whole-word occurrence
// of the key and of the scope in its text replaced by "[redacted]": the
// ledger never quotes them, but a database driver's message may. errors.Is
// still matches the cause's chain (ledger.ErrLeaseLost, ledger.ErrBusy);
// errors.As and Unwrap do not reach it, since a driver's typed error may
// hold the key in a field. Other events have no Err. The key and the scope
// are in no event. Refusals of the key, the scope or the body, requests
// that pass through unprotected, and a claim abandoned because the client
// left report nothing.
//
// Observe is called synchronously, on the request's goroutine (the
// heartbeat's for a failed extension), before the answer is complete: it
// must be quick.
//
// # Client
//
// The client side lives in package idemclient, which links no ledger or
// database: its Transport keys every POST and PATCH and retries it with
// the same key on network errors, 409 in flight, 429 and 503, never a
// replayed answer. [Transport], [NewKey], [GenerateKey] and [SetKey]
// remain here as aliases of idemclient's.
package idemhttp
