package schema

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// onPinned runs f on one connection of db, held for the whole call, and
// returns f's error. When f reports drop, the connection's session may be
// in any state (an open transaction, a held lock), and db discards the
// connection instead of taking it back.
func onPinned(ctx context.Context, db *sql.DB, f func(c driver.Conn) (drop bool, err error)) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var ferr error
	rerr := conn.Raw(func(dc any) error {
		drop, err := f(dc.(driver.Conn))
		ferr = err
		if drop {
			return driver.ErrBadConn
		}
		return nil
	})
	if ferr != nil {
		return ferr
	}
	return rerr
}

// borrowed is a driver.Connector that hands out one connection of another
// pool, which it does not own: closing it leaves the connection open. It is
// valid only while that connection is held (inside sql.Conn.Raw).
type borrowed struct {
	conn driver.Conn
	drv  driver.Driver
}

func (b borrowed) Connect(context.Context) (driver.Conn, error) { return borrowedConn{b.conn}, nil }
func (b borrowed) Driver() driver.Driver                        { return b.drv }

// borrowedConn forwards to the borrowed connection everything that
// database/sql looks for, except Close.
type borrowedConn struct{ c driver.Conn }

var errUnsupported = errors.New("schema: borrowed connection: driver lacks a context-aware method")

func (b borrowedConn) Prepare(q string) (driver.Stmt, error) { return b.c.Prepare(q) }
func (b borrowedConn) Close() error                          { return nil }

func (b borrowedConn) Begin() (driver.Tx, error) { return b.c.Begin() }

func (b borrowedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c, ok := b.c.(driver.ConnBeginTx); ok {
		return c.BeginTx(ctx, opts)
	}
	return nil, errUnsupported
}

func (b borrowedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if c, ok := b.c.(driver.ConnPrepareContext); ok {
		return c.PrepareContext(ctx, q)
	}
	return b.c.Prepare(q)
}

func (b borrowedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if c, ok := b.c.(driver.ExecerContext); ok {
		return c.ExecContext(ctx, q, args)
	}
	return nil, driver.ErrSkip
}

func (b borrowedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if c, ok := b.c.(driver.QueryerContext); ok {
		return c.QueryContext(ctx, q, args)
	}
	return nil, driver.ErrSkip
}

func (b borrowedConn) Ping(ctx context.Context) error {
	if c, ok := b.c.(driver.Pinger); ok {
		return c.Ping(ctx)
	}
	return nil
}

func (b borrowedConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := b.c.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
