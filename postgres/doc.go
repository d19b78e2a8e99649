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
package postgres
