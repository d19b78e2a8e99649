package mysql

import "context"

// TableExists and ColumnExists read information_schema for the current
// database (DATABASE()), the one the ledger's unqualified statements use;
// with none selected they find nothing.
func (e executor) TableExists(ctx context.Context, table string) (bool, error) {
	var found bool
	err := e.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = ?)`, table).Scan(&found)
	return found, err
}

func (e executor) ColumnExists(ctx context.Context, table, column string) (bool, error) {
	var found bool
	err := e.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?)`, table, column).Scan(&found)
	return found, err
}
