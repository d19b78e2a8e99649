// Package ledger makes a mutation run at most once per idempotency key and
// answers every retry with the first outcome.
//
// Records live in one table, idempotency_ledger (see package schema), keyed
// by (scope, key) and guarded by the request's fingerprint. The ledger holds
// no connection: each operation takes the *sql.DB, *sql.Tx or *sql.Conn to
// run on (DBTX), so what commits together is the caller's choice.
//
// There are two ways to use it.
//
// Mutate, for work that is all in the same database: it claims the key,
// runs the callback and stores its value inside the caller's transaction,
// so the business writes and the ledger row commit or vanish together.
// MutateOutcome is the same for a callback whose result is an Outcome (an
// HTTP answer), stored as lease mode stores one, so that records of the two
// ways are interchangeable.
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
//
// Times are kept as Unix milliseconds (UTC).
//
// # Engines
//
// The ledger runs on SQLite (databases opened with package sqlite, migrated
// with schema.Migrate; one machine) or on PostgreSQL (opened with the pgx
// stdlib driver, migrated with schema.MigratePostgres; any number of
// replicas sharing it). The caller chooses with Config.Engine; the API and
// the guarantees are the same on both. Two things differ:
//
//   - The clock. On SQLite, times come from Config.Now (time.Now by
//     default). On PostgreSQL, every statement reads the server's clock
//     (statement_timestamp()), so that replicas whose clocks disagree
//     still agree on when a lease runs out and a record expires; Config.Now,
//     when set, replaces the server's clock (tests use it to move time).
//   - Waiting duplicates. A duplicate Mutate waits for the first one's
//     transaction on both engines. On PostgreSQL under REPEATABLE READ or
//     SERIALIZABLE it then fails with an error matching ErrRetryable (a
//     serialization failure): retry the whole transaction, and it replays.
//
// The core talks to the engines through a small internal interface; each
// wraps the sqlc-generated queries of its engine.
package ledger
