// Package schema holds the database migrations of idemledger, embedded in
// the binary, and applies them with golang-migrate: Migrate, Down and
// Version for SQLite, MigratePostgres, DownPostgres and VersionPostgres for
// PostgreSQL (a *sql.DB opened with the pgx stdlib driver). The SQLite
// functions keep their short names, which existing callers use.
//
// The migrations create one table, idempotency_ledger, and indexes whose
// names start with "idemledger_", so that they live beside the
// application's own tables without collisions. Both engines record their
// progress in their own table, idemledger_schema_migrations, never in the
// schema_migrations table that the application's golang-migrate uses. On
// PostgreSQL everything lives in the connection's current schema (the
// first one on its search_path).
//
// Users of another migration tool can copy the SQL from FS (files
// sqlite/NNNNNN_name.up.sql and .down.sql, the same under postgres/, in
// golang-migrate's naming).
package schema
