// Package schema holds the database migrations of idemledger, embedded in
// the binary, and Migrate, which applies them to SQLite with golang-migrate.
//
// The migrations create one table, idempotency_ledger, and indexes whose
// names start with "idemledger_", so that they live beside the
// application's own tables without collisions. Migrate records its progress
// in its own table, idemledger_schema_migrations, never in the
// schema_migrations table that the application's golang-migrate uses.
//
// Users of another migration tool can copy the SQL from FS (files
// sqlite/NNNNNN_name.up.sql and .down.sql, golang-migrate's naming).
package schema
