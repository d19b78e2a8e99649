package sqlite

import (
	"context"
	"database/sql"
)

// TableExists and ColumnExists read the main database's schema
// (sqlite_schema, pragma_table_info), where the migrations put the
// ledger's tables. They only read, so they work on a connection opened
// read-only too: a tool can look at a file before it opens it with [Open],
// which switches it to WAL.
func (e executor) TableExists(ctx context.Context, table string) (bool, error) {
	var found bool
	err := e.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = ?)`, table).Scan(&found)
	return found, err
}

func (e executor) ColumnExists(ctx context.Context, table, column string) (bool, error) {
	var found bool
	err := e.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pragma_table_info(?, 'main') WHERE name = ?)`, table, column).Scan(&found)
	return found, err
}

func (e executor) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if e.tx != nil {
		return e.tx.QueryRowContext(ctx, query, args...)
	}
	return e.d.db.QueryRowContext(ctx, query, args...)
}
