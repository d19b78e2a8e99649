// Package ledger makes a mutation run at most once per idempotency key and
// answers every retry with the first outcome.
//
// Records live in one table, idempotency_ledger (see package schema), keyed
// by (scope, key) and guarded by the request's fingerprint. A Ledger is
// built from a driver that holds the database (the New of a driver
// package, such as sqlite.New), so engine and database cannot disagree;
// Ledger[TTx] is generic in the driver's transaction type (*sql.Tx or
// pgx.Tx), which Mutate takes. Lease mode, Get, Purge and Stats run on the driver's pool.
//
// There are two ways to use it.
//
// Mutate, for work that is all in the same database: it claims the key,
// runs the callback and stores its value inside the caller's transaction,
// so the business writes and the ledger row commit or vanish together.
// [MutateOutcome] is the same for a callback whose result is an Outcome (an
// HTTP answer), stored as lease mode stores one, so that records of the two
// ways are interchangeable; [MutateOutcomeCommit] commits the transaction
// after it, for a caller that owns it (idemhttp's TxHandler).
//
// Lease mode, for effects outside the database (calling a payment API):
// Claim commits an in-flight record holding a lease; the caller performs
// the effect and then stores the outcome with Complete, or drops the claim
// with Release after a failure that a retry may repair. Extend is the
// heartbeat of long work. A claim whose lease runs out may be taken over by
// a retry with the same fingerprint; the fence then grows and the old
// holder's Complete, Release and Extend fail with ErrLeaseLost.
//
// Get reads a record; Purge deletes expired ones in bounded batches.
// Lookup answers a retry from a plain read, claiming nothing.
//
// Times are kept as Unix milliseconds (UTC).
//
// # Mutate
//
// Mutate sets a SAVEPOINT in the caller's transaction tx, claims req, runs
// fn, stores fn's value as JSON and releases the savepoint, all in tx.
// Nothing is durable until the caller commits tx; if the caller rolls tx
// back, the claim goes with fn's writes and a retry runs fn again.
//
// fn must do its writes through tx, never through the pool tx came from:
// the ledger row is in tx, and with SQLite a second connection waits for
// tx's write lock, so a pool of one connection deadlocks and a larger one
// times out with SQLITE_BUSY. fn must not commit or roll back tx either:
// Mutate then returns an error wrapping sql.ErrTxDone (on every driver), and
// a commit by fn has already made the claim durable without its outcome, so
// retries get an *[InFlightError] until the lease runs out and then run fn
// again.
//
// If fn returns an error or panics, Mutate rolls back to the savepoint, so
// the claim and fn's writes vanish together while tx stays usable; fn's
// error is returned unchanged (joined with a rollback failure, if any) and
// a panic is re-raised after the rollback. Every other error is handled the
// same way: whenever Mutate returns an error, nothing of it is left in tx.
// Only if that rollback itself fails (the error then says "ledger: mutate:
// rollback:") may the claim and fn's writes remain: roll tx back then.
// Mutate can be nested: each call has its own savepoint. Drivers that can
// (pgxv5) send the SAVEPOINT with the claim and the outcome with the
// RELEASE in one round trip each (driver.Batcher), with the same results;
// the mysql driver answers a replay from its claim's read before it sets
// the savepoint, so a replay there sets none.
//
// A concurrent duplicate in another transaction waits for the first to
// commit or roll back, then replays (or, after a rollback, runs fn). It
// never runs fn while the first may still commit. On SQLite it waits in
// BEGIN, since transactions opened by sqlite.Open are immediate; on
// PostgreSQL it waits on the row (or on the first's uncommitted insert of
// it). Under READ COMMITTED, PostgreSQL's default, it then replays; under
// REPEATABLE READ or SERIALIZABLE the row came after its snapshot, and
// Mutate returns an error matching [ErrRetryable]: roll tx back and run the
// whole transaction again, which replays.
//
// What tx allows a replay: on PostgreSQL, the claim of a record that stands
// writes nothing, locks no row and assigns tx no transaction id, so a tx
// that does nothing else commits without writing WAL. On SQLite, the
// immediate transactions of sqlite.Open hold the database's write lock
// from BEGIN: a replay in tx writes nothing, but other writers have
// waited for tx all the same. To answer retries without that lock, call
// [Ledger.Lookup] on the pool before beginning tx, as idemhttp's TxHandler
// does.
//
// An *InFlightError comes when the key is held by a lease-mode claim
// ([Ledger.Claim], idemhttp's Middleware), including one made earlier in tx
// itself. T must survive encoding/json: the replayed Value is the JSON
// decoding of the first one; a value whose JSON does not decode back into
// T is refused (and rolled back) on the first execution. Give T a concrete
// type: with any (or another interface) a number comes back as float64,
// so an int64 beyond 2^53 replays as another value. The stored Outcome
// has Status 0, no Header and the JSON as Body.
//
// # Replays
//
// A claim reads the key's record before it writes, and writes only when
// there is no record or one that may be taken over. A retry of a
// completed, unexpired record with the same fingerprint is answered from
// that plain read, with no write and no lock (no row lock, no SQLite write
// lock, no WAL flush); so are a key held under a live lease (an
// *InFlightError) and a key reused with another fingerprint while its
// record is unexpired ([ErrKeyReused]). On PostgreSQL the read and the
// conditional write are one statement; on SQLite the read is a SELECT on
// the pool, outside any transaction.
//
// The answer is safe because a record that stands cannot change under it.
// A completed record never changes until it expires; an in-flight record
// changes only by its lease holder (Complete, Release, Extend) until its
// lease runs out; a takeover, and Purge, touch only records that have
// expired (or in flight under a lease that ran out). Expiry is judged by
// the engine's clock, read in the same statement as the record on
// PostgreSQL and just after it on SQLite, never before: a record unexpired
// at that time was unexpired at the read, so the answer was true at the
// instant of the read, whatever happens after it. A record being taken
// over or purged has expired, and is never answered from.
//
// # The cache of completed outcomes
//
// For the same reason a completed record, once read, can answer its key
// from memory until it expires, for any fingerprint: a replay, or
// ErrKeyReused. Claim, Lookup, Mutate and Recall answer from the cache;
// Claim, Lookup and Mutate keep each completed record they read committed
// (on the pool, or by a replay of MutateOutcomeCommit once its commit
// succeeded; never one read in a caller's transaction, which may have
// written it and may roll it back), in a cache bounded by
// [Options.CacheBytes] ([DefaultCacheBytes], on by default; [CacheOff] turns it
// off), least recently used out first; a record over a quarter of one of
// the cache's shards (each is at least 1 MiB) is not kept. Complete on the
// pool, and MutateOutcomeCommit once its commit succeeded, keep the record
// they wrote, with the times its statement reports the engine stored
// (RETURNING on PostgreSQL and SQLite, the statement's LAST_INSERT_ID on
// MySQL, whose drivers do not report a commit mark: a record with one is
// kept there once read); so the process that completed a record answers
// its replays from memory at once. CompleteTx and Mutate in a caller's
// transaction keep nothing. A replica that did not write or read a record
// reads it from the database, as without the cache.
// A hit or a miss (a completed record answered from the database) is
// reported to [Options.Observer].
//
// Expiry is the engine's, and the process's clocks may differ from it. A
// kept record answers only while the record's remaining life, as the
// engine's clock gave it at the read, has not passed on the process's
// clocks counted from before the read, less a margin of 1 s and a
// thousandth of that remaining life (for a step or a drift of either
// clock): both the monotonic clock (which a step of the wall clock does
// not move) and the wall clock (which keeps counting while a machine is
// suspended) must be before that deadline. With [Options.Now] set, its
// clock is used instead. So the cache never answers past the record's
// expiry as the engine judges it, unless the engine's clock runs faster
// than the process's by more than the margin; after expiry a takeover may
// complete another outcome under the key, and the next claim reads it.
//
// One answer differs from the database's: a record deleted by hand before
// its expiry (no operation of the ledger does) is still answered by the
// processes that kept it, until its expiry. Restart them, or run them with
// CacheOff, if records are deleted by hand.
//
// # Faults
//
// A statement whose connection breaks (reset, closed, the reply lost, the
// server shut down; SQLITE_IOERR on SQLite) may or may not have run: such
// errors match ErrOutcomeUnknown. Lease mode copes with them so that no
// key runs twice after its commit point and none stays locked for nothing:
//
//	operation  on a connection fault                   then
//	Claim      ends the lease it may have taken        the retry takes the key over at once
//	           (Abandon, retried for up to 2 s)
//	Commit     retried until the lease runs out        repeatable: a retry keeps the first mark
//	Complete   retried until the lease runs out        "no row" after an unknown attempt is
//	                                                   settled by reading the record
//	Release    retried until the lease runs out        a record found released at the claim's
//	                                                   fence counts as released
//	Extend     retried until the lease runs out        repeatable
//
// Retries go to the driver's pool, which hands out a fresh connection.
// Inside a transaction (Mutate, CompleteTx) nothing is retried: a broken
// connection took the transaction with it, and the caller runs it again.
// A busy store ([ErrBusy]) is retried the same way.
//
// Every lease-mode statement answers within the lease, its retries
// included: a statement is held up by another transaction's lock or by a
// connection that went silent (packets held, no reset) no longer than
// that. The drivers bound the engine's own lock waits by the same
// deadline (see the driver package doc, Deadlines), so a lock held past
// it ends in ErrBusy with nothing written; a statement cut short by the
// deadline matches [ErrOutcomeUnknown], since it may still run.
//
// # Commit point
//
// Lease mode runs effects the database cannot roll back. Commit writes into
// the record that the effect was made; from then on the record is never
// handed to a takeover as if nothing had happened. Should its holder vanish
// before Complete, a claim after the lease gets a *[CommittedError]
// ([ErrCommitted]), or, when the request sets Recover, takes the record over
// with [Claim.CommittedAt] set so that the operation looks its effect up
// instead of making it again (the recovery point of Stripe's design).
// Release refuses a marked record. A second execution is then possible
// only when no commit point was marked, or when the holder died between the
// effect and the mark.
//
// # Engines
//
// The ledger runs on every engine that has a driver package (README.md
// lists them); the API and the guarantees are the same on each. What
// differs is the driver's to say, in its package documentation: whose
// clock judges leases and expiry (the process's where the engine serves
// one machine; the server's where replicas share it, so that replicas
// whose clocks disagree still agree, unless Options.Now replaces it), how
// a duplicate waits for the first (see Mutate above), where the tables
// live and how Purge and Reclaim work there.
//
// The core talks to the drivers through package driver's Executor and
// links no database package: error codes are read through small
// interfaces (SQLState, Code).
package ledger
