package pgxv5

import (
	"context"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/internal/pgmaint"
)

var _ idriver.Reclaimer = (*Driver)(nil)

// Reclaim runs VACUUM (ANALYZE) on the ledger's table, or VACUUM (FULL,
// ANALYZE) when full (see ledger.Ledger.Reclaim and package postgres's doc,
// Vacuum); before and after are pg_total_relation_size. It needs a pool or
// a connection outside a transaction: VACUUM cannot run inside one.
func (d *Driver) Reclaim(ctx context.Context, full bool) (before, after int64, err error) {
	size := func() (n int64, err error) {
		err = d.db.QueryRow(ctx, pgmaint.SizeQuery).Scan(&n)
		return n, pgerr.Interpret(err)
	}
	if before, err = size(); err != nil {
		return 0, 0, err
	}
	if _, err := d.db.Exec(ctx, pgmaint.Vacuum(full)); err != nil {
		return before, 0, pgerr.Interpret(err)
	}
	after, err = size()
	return before, after, err
}
