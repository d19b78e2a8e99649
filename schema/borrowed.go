package schema

import (
	"context"
	"database/sql/driver"
	"errors"
)

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
