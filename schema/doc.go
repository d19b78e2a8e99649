// Package schema holds the database migrations of idemledger, embedded in
// the binary, and applies them with golang-migrate: Migrate, Down and
// Version, each taking the ledger's driver (sqlite.New, postgres.New or
// pgxv5.New), which supplies golang-migrate's database driver for its
// engine. A program that uses one engine therefore links only that
// engine's migration driver.
//
// The migrations create one table, idempotency_ledger, and indexes whose
// names start with "idemledger_", so that they live beside the
// application's own tables without collisions. Both engines record their
// progress in their own table, idemledger_schema_migrations, never in the
// schema_migrations table that the application's golang-migrate uses. On
// PostgreSQL everything lives in the connection's current schema (the
// first one on its search_path that exists; with none, ErrNoCurrentSchema).
//
// Users of another migration tool can copy the SQL from FS (files
// sqlite/NNNNNN_name.up.sql and .down.sql, the same under postgres/, in
// golang-migrate's naming).
//
// # What a run guarantees
//
// The caller's database stays open and usable: a run uses one connection
// of the pool, which it gives back (or, after a failure that may have left
// a transaction open, drops); golang-migrate's Close, which would close the
// caller's pool, and its Drop, which would drop every table in the
// database, are never called on it.
//
// Processes (or goroutines, or replicas) that start at once may all call
// Migrate on the same database, new or not. On SQLite each run holds the
// write lock from its first read of the version to its last write, so one
// applies the migrations and the others wait (up to busy_timeout, 10 s with
// sqlite.Open, then SQLITE_BUSY), then find nothing to do; nothing a run
// writes is visible to other connections before it ends, and a process
// that dies during a run leaves the file as it was. On PostgreSQL a run is
// one transaction that holds a transaction-level advisory lock
// (pg_advisory_xact_lock, keyed on the database, schema and table names as
// golang-migrate keys its session lock, so that runs of earlier releases
// and of this one exclude each other): nothing it writes is visible before
// it commits, a process that dies during a run has it rolled back whole,
// and no lock is ever left on a pooler's server connection, so Migrate is
// safe through PgBouncer in transaction pooling (README.md, "Behind a
// pooler"). A run waits for the lock as long as ctx allows, and at most
// golang-migrate's lock timeout (15 s), after which it fails with
// migrate.ErrLockTimeout and changes nothing. Version never reads a run
// half-way: on SQLite it sees only committed runs, on PostgreSQL it waits
// for a run in progress.
//
// golang-migrate's API takes no context; when ctx is cancelled a run stops
// between two migrations (never inside one), keeps the ones applied, and
// returns ctx's error. On PostgreSQL a migration that fails rolls the
// whole run back, and the database stays clean at the version it had. On
// SQLite a migration that fails is undone and leaves the database dirty at
// its version, as golang-migrate records it (so do earlier releases on
// PostgreSQL); that run,
// and every later one until the schema is repaired and the version forced
// by hand (migrate's force command), fails at once with an error that
// matches migrate.ErrDirty (errors.As) and says that the database is dirty.
// A database at a version above Latest (a newer release migrated it) is
// refused with ErrNewerSchema, and nothing is changed. A nil context or
// driver is an error, never a panic.
package schema
