// Package schema holds the database migrations of idemledger, embedded in
// the binary, and applies them with golang-migrate: Migrate, Down and
// Version, each taking the ledger's driver (the New of a driver package),
// which supplies golang-migrate's database driver for its engine (see
// Driver). A program that uses one engine therefore links only that
// engine's migration driver.
//
// The migrations create one table, idempotency_ledger, and indexes whose
// names start with "idemledger_", so that they live beside the
// application's own tables without collisions. Every engine records its
// progress in its own table, idemledger_schema_migrations, never in the
// schema_migrations table that the application's golang-migrate uses.
// Where the tables go (a file, a schema of the search_path, the DSN's
// database) is the driver's to say, in its package documentation.
//
// Users of another migration tool can copy the SQL from FS (a directory
// per engine, NNNNNN_name.up.sql and .down.sql, in golang-migrate's
// naming; see Files).
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
// Migrate on the same database, new or not: each run holds its engine's
// migration lock ([Migration.With]) from its first read of the version to
// its last write, so one applies the migrations and the others wait, then
// find nothing to do. A run waits for the lock as long as ctx allows, and
// at most the engine's lock wait, after which it fails and changes
// nothing. Version never reads a run half-way. How the engine locks, what a
// process that dies during a run leaves, and whether a run is safe behind
// a connection pooler: each driver's package documentation says, under
// "Migrations".
//
// golang-migrate's API takes no context; when ctx is cancelled a run stops
// between two migrations (never inside one), keeps the ones applied, and
// returns ctx's error. A migration that fails either rolls its whole run
// back, where the engine can run it in one transaction, or leaves the
// database dirty at its version, as golang-migrate records it (the
// driver's documentation says which); a dirty database fails every later
// run at once, until the schema is repaired and the version forced by hand
// (migrate's force command), with an error that matches migrate.ErrDirty
// (errors.As) and says that the database is dirty.
// A database at a version above Latest (a newer release migrated it) is
// refused with [ErrNewerSchema], and nothing is changed. A nil context or
// driver is an error, never a panic.
package schema
