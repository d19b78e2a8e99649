// Package pgxv5 is the ledger's driver for PostgreSQL through pgx's native
// API (github.com/jackc/pgx/v5): for programs that hold a *pgxpool.Pool
// and pass pgx.Tx around. ledger.Mutate then takes the caller's pgx.Tx, so
// the business writes and the ledger row commit together. Programs on
// database/sql use package postgres instead; both share the same schema
// and records.
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db.internal/app")
//	// ...
//	d := pgxv5.New(pool)
//	if err := schema.Migrate(ctx, d); err != nil { ... }
//	l, err := ledger.New(d, ledger.Options{})
//
// Leases and expiry are judged by the server's clock
// (statement_timestamp()), never the replicas', unless ledger.Options.Now is
// set. The ledger's table lives in the connection's current schema (the
// first schema of its search_path that exists); schema.Migrate runs as
// with package postgres (see its Migrations section).
//
// # Round trips
//
// ledger.Mutate sends its SAVEPOINT together with the claim, and the
// outcome's UPDATE together with RELEASE SAVEPOINT, each pair in one round
// trip: a first execution costs two round trips besides fn's and the
// caller's BEGIN and COMMIT, where the database/sql drivers need four.
// Within a pair the server runs the second statement only if the first
// succeeded, and the RELEASE only if the outcome was stored, so Mutate's
// guarantees are those of the unbatched statements. How the pair travels
// follows the connection's pgx.QueryExecMode:
//
//   - QueryExecModeCacheStatement (pgx's default): a pipeline, with the
//     claim and the outcome's UPDATE prepared once per connection
//     (pgx.Conn.Prepare, named after their text) and the savepoint
//     statements, whose names are new every time, never prepared;
//   - QueryExecModeExec and QueryExecModeSimpleProtocol (for PgBouncer's
//     transaction pooling, say): a pgx.Batch, which prepares nothing there;
//   - QueryExecModeCacheDescribe and QueryExecModeDescribeExec: one
//     statement at a time, as before (each new savepoint name would cost a
//     describe round trip of its own).
//
// The mode is read from the pool's or connection's configuration when
// [New] is called.
//
// Where it batches, [Driver.Begin] takes a connection and defers the BEGIN
// to the transaction's first statement: when that is Mutate's, BEGIN travels
// with the SAVEPOINT and the claim; any other first statement sends BEGIN
// alone first, as pgx's own Begin would. ledger.MutateOutcomeCommit (what
// idemhttp's TxHandler uses) sends COMMIT with the outcome and the RELEASE
// too, so that such a transaction costs as many round trips as a plain one
// doing fn's writes: three for a first execution whose fn makes one
// statement, two for a replay. Pseudo-nested Begin and LargeObjects on that
// transaction, after a batched BEGIN, cost one more round trip (pgx makes
// them only for its own transactions). A pipeline would run below pgx's tracers, so when that
// configuration has a Tracer (otelpgx's, say), Mutate sends one statement
// at a time in every mode, and the tracer sees each of them: seven round
// trips for a first execution instead of five.
package pgxv5
