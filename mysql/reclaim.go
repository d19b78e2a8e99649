package mysql

import (
	"context"

	idriver "github.com/idemledger/idemledger/driver"
)

var _ idriver.Reclaimer = (*Driver)(nil)

// sizeQuery is the bytes the ledger's table takes, data, indexes and free
// space inside its tablespace, as information_schema reports them.
const sizeQuery = `SELECT CAST(COALESCE(data_length + index_length + data_free, 0) AS SIGNED)
FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'idempotency_ledger'`

// Reclaim measures the table; with full it first rebuilds it (OPTIMIZE
// TABLE: InnoDB copies the rows into a new tablespace and gives the old one
// back, reading and writing the whole table, while writes wait only at its
// start and end). Without full it only refreshes the figures (ANALYZE
// TABLE): InnoDB's purge thread reuses the pages of deleted rows for new
// ones by itself, and nothing short of a rebuild returns them to the file
// system. See ledger.Ledger.Reclaim.
func (d *Driver) Reclaim(ctx context.Context, full bool) (before, after int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	size := func() (n int64, err error) {
		// ANALYZE TABLE makes MySQL 8's cached information_schema figures
		// current; its result set is read and dropped.
		rows, err := d.db.QueryContext(ctx, "ANALYZE TABLE idempotency_ledger")
		if err != nil {
			return 0, interpret(err)
		}
		rows.Close()
		err = d.db.QueryRowContext(ctx, sizeQuery).Scan(&n)
		return n, interpret(err)
	}
	if before, err = size(); err != nil {
		return 0, 0, err
	}
	if full {
		rows, err := d.db.QueryContext(ctx, "OPTIMIZE TABLE idempotency_ledger")
		if err != nil {
			return before, 0, interpret(err)
		}
		rows.Close()
	}
	after, err = size()
	return before, after, err
}
