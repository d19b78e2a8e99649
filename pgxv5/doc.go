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
//	l, err := ledger.New(d, ledger.Config{})
//
// Leases and expiry are judged by the server's clock
// (statement_timestamp()), never the replicas', unless ledger.Config.Now is
// set. The ledger's table lives in the connection's current schema (the
// first schema of its search_path that exists).
package pgxv5
