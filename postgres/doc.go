// Package postgres is the ledger's driver for PostgreSQL through
// database/sql, with pgx's database/sql driver
// (github.com/jackc/pgx/v5/stdlib): for programs whose transactions are
// *sql.Tx (database/sql, sqlx, most ORMs). Programs on pgx's native API
// (pgxpool.Pool, pgx.Tx) use package pgxv5 instead; both share the same
// schema and records.
//
//	db, err := sql.Open("pgx", "postgres://app@db.internal/app")
//	// ...
//	d := postgres.New(db)
//	if err := schema.Migrate(ctx, d); err != nil { ... }
//	l, err := ledger.New(d, ledger.Options{})
//
// Leases and expiry are judged by the server's clock
// (statement_timestamp()), never the replicas', unless ledger.Options.Now is
// set. The ledger's table lives in the connection's current schema (the
// first schema of its search_path that exists).
//
// # Migrations
//
// The tables live in the connection's current schema (the first one on
// its search_path that exists; with none, schema.ErrNoCurrentSchema). A
// run of schema.Migrate is one transaction that holds a
// transaction-level advisory lock (pg_advisory_xact_lock, keyed on the
// database, schema and table names as golang-migrate keys its session
// lock, so that runs of earlier releases and of this one exclude each
// other): nothing it writes is visible before it commits, a process that
// dies during a run has it rolled back whole, as has a migration that
// fails (the database stays clean at the version it had; earlier releases
// left it dirty), and no lock is ever left on a pooler's server
// connection, so Migrate is safe through PgBouncer in transaction pooling
// (docs/engines.md, "Behind a pooler"). A run waits for the lock at most
// golang-migrate's lock timeout (15 s), then fails with
// migrate.ErrLockTimeout. schema.Version waits for a run in progress. The
// pgxv5 driver migrates the same way.
//
// # Purge
//
// Each batch of Purge locks up to its size of expired rows in expiry order
// (FOR UPDATE SKIP LOCKED, so purgers on several replicas never wait for
// each other), deletes them where it locked them, and starts where the
// batch before stopped, never over the index entries of the rows deleted
// before it. Each batch commits as any transaction does, flushing its own
// WAL, so that the requests beside it do not flush it for the purge with
// their commits. The WAL is what requests beside a purge pay for: at 5M
// records an unpaced purge made them wait up to half a second, which is
// why zero PurgeOptions pause between batches
// (ledger.DefaultPurgeRowLockPause; BENCHMARKS.md, "PostgreSQL purge").
//
// # Vacuum
//
// Purge deletes rows; PostgreSQL keeps their space as dead rows until a
// VACUUM makes it reusable. Every record is deleted a TTL after it is
// written, so the table churns its whole content once per TTL. Migration
// 000004 sets the table's autovacuum scale factors to 2 % (from 20 %), so
// autovacuum runs in small, frequent passes; Purge itself runs VACUUM
// (ANALYZE) after deleting rows (ledger.Ledger.Reclaim, unless
// PurgeOptions.NoReclaim), at autovacuum's pace: it sets
// vacuum_cost_delay to 2 ms on the connection that runs it and resets it
// after, so that requests beside it do not wait for its burst of reads and
// WAL (BENCHMARKS.md, "PostgreSQL purge"). Behind a transaction pooler (PgBouncer's transaction mode) the
// three statements may reach different server connections: the VACUUM
// then runs at full speed, and one server connection may keep the delay
// for a later manual VACUUM that others run on it. Neither shrinks the files: the freed space is
// reused by new records, so the table settles at about its live size plus
// what one purge interval deletes. To check:
//
//	SELECT n_live_tup, n_dead_tup, last_vacuum, last_autovacuum
//	FROM pg_stat_user_tables WHERE relname = 'idempotency_ledger';
//	SELECT pg_size_pretty(pg_total_relation_size('idempotency_ledger'));
//
// n_dead_tup should fall back near zero after each purge. To give the space
// to the file system (after the table shrank for good), run idemledger
// reclaim -full (VACUUM FULL) in a maintenance window: it holds an
// exclusive lock on the table while it copies it. Stats' Completed comes
// from the planner's row count (reltuples), which VACUUM and ANALYZE renew.
//
// # Partitioning by expiry (beyond ~100M records)
//
// Not built: it is needed only where one table cannot meet the purge's
// targets, and at 5M records one table purges half its records beside a
// live load within them (BENCHMARKS.md, "The ledger at scale: 5M records").
// Past about 100M records, deleting rows one by one (and vacuuming them) costs as much I/O
// as writing them. The ledger would then partition idempotency_ledger by
// RANGE (expires_at), one partition per hour or day, so that purge drops or
// detaches a partition whose upper bound has passed, a catalog change that
// frees its files at once, with no dead rows and no vacuum. What it costs:
//
//   - the primary key must include the partition key, so (scope, key) is
//     no longer unique by itself: Claim would look the key up in every
//     live partition (an index probe per partition, about TTL/width of
//     them), and a takeover or Complete that moves expires_at moves the row
//     to another partition (a delete and an insert);
//   - uniqueness of (scope, key) across partitions must be kept by the
//     ledger itself (a claim inserts into the partition of its expiry only
//     after the probe, under an advisory lock of the key's hash), since
//     PostgreSQL has no global unique index;
//   - partitions must be created ahead of time (a maintenance job, or
//     pg_partman), and in-flight rows whose lease outlives their partition
//     must be moved before it is dropped;
//   - a different schema for PostgreSQL than for SQLite, and a migration
//     that rewrites the table.
//
// A cheaper middle ground keeps one table and deletes in expiry order (as
// Purge does), with autovacuum tuned as above.
package postgres
