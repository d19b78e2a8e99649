package pgxv5

import (
	"context"

	"github.com/idemledger/idemledger/internal/pgmigrate"
)

func (e executor) TableExists(ctx context.Context, table string) (bool, error) {
	var found, hasSchema bool
	var path string
	if err := e.db.QueryRow(ctx, pgmigrate.TableExistsSQL, table).Scan(&found, &hasSchema, &path); err != nil {
		return false, txDone(err)
	}
	return pgmigrate.TableExists(found, hasSchema, path)
}

func (e executor) ColumnExists(ctx context.Context, table, column string) (bool, error) {
	var found bool
	err := e.db.QueryRow(ctx, pgmigrate.ColumnExistsSQL, table, column).Scan(&found)
	return found, txDone(err)
}
