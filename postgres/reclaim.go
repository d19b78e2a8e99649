package postgres

import (
	"context"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/internal/pgmaint"
)

var _ idriver.Reclaimer = (*Driver)(nil)

// Reclaim runs VACUUM (ANALYZE) on the ledger's table at autovacuum's pace,
// or VACUUM (FULL, ANALYZE) at full speed when full (see
// ledger.Ledger.Reclaim and the package doc, Vacuum); before and after are
// pg_total_relation_size.
func (d *Driver) Reclaim(ctx context.Context, full bool) (before, after int64, err error) {
	size := func() (n int64, err error) {
		err = d.db.QueryRowContext(ctx, pgmaint.SizeQuery).Scan(&n)
		return n, pgerr.Interpret(err)
	}
	if before, err = size(); err != nil {
		return 0, 0, err
	}
	if err := d.vacuum(ctx, full); err != nil {
		return before, 0, pgerr.Interpret(err)
	}
	after, err = size()
	return before, after, err
}

// vacuum runs the VACUUM, the plain one throttled on a connection of its
// own (pgmaint.Throttle).
func (d *Driver) vacuum(ctx context.Context, full bool) error {
	if full {
		_, err := d.db.ExecContext(ctx, pgmaint.Vacuum(full))
		return err
	}
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, pgmaint.Throttle); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, pgmaint.Vacuum(full))
	// The reset runs even when ctx ended the VACUUM, so that the connection
	// goes back to the pool as it came; if it fails, the connection is
	// likely broken and database/sql drops it.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), pgmaint.Unthrottle); err == nil {
		err = rerr
	}
	return err
}
