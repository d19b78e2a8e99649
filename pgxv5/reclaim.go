package pgxv5

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/internal/pgmaint"
)

var _ idriver.Reclaimer = (*Driver)(nil)

// Reclaim runs VACUUM (ANALYZE) on the ledger's table at autovacuum's pace,
// or VACUUM (FULL, ANALYZE) at full speed when full (see ledger.Ledger.Reclaim and package postgres's doc,
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
	if err := d.vacuum(ctx, full); err != nil {
		return before, 0, pgerr.Interpret(err)
	}
	after, err = size()
	return before, after, err
}

// vacuum runs the VACUUM, the plain one throttled on one connection
// (pgmaint.Throttle): a connection acquired from a pool, or the *pgx.Conn
// itself. On another DB, whose statements may each go to a different
// connection, it runs unthrottled rather than leave the setting behind.
func (d *Driver) vacuum(ctx context.Context, full bool) error {
	var conn *pgx.Conn
	switch db := d.db.(type) {
	case *pgxpool.Pool:
		if full {
			break
		}
		c, err := db.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		conn = c.Conn()
	case *pgx.Conn:
		conn = db
	}
	if full || conn == nil {
		_, err := d.db.Exec(ctx, pgmaint.Vacuum(full))
		return err
	}
	if _, err := conn.Exec(ctx, pgmaint.Throttle); err != nil {
		return err
	}
	_, err := conn.Exec(ctx, pgmaint.Vacuum(full))
	// The reset runs even when ctx ended the VACUUM, so that the
	// connection goes back as it came.
	if _, rerr := conn.Exec(context.WithoutCancel(ctx), pgmaint.Unthrottle); err == nil {
		err = rerr
	}
	return err
}
