// Package borrow lends one connection of a database/sql pool to a private
// *[sql.DB], for golang-migrate, whose Close would otherwise close the
// caller's pool.
package borrow

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// OnPinned runs f on one connection of db, held for the whole call, and
// returns f's error. When f reports drop, the connection's session may be
// in any state (an open transaction, a held lock), and db discards the
// connection instead of taking it back.
func OnPinned(ctx context.Context, db *sql.DB, f func(c driver.Conn) (drop bool, err error)) error {
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

// Connector is a [driver.Connector] that hands out one connection of another
// pool, which it does not own: closing it leaves the connection open. It is
// valid only while that connection is held (inside [sql.Conn.Raw]).
type Connector struct {
	conn driver.Conn
	drv  driver.Driver
}

// NewConnector lends c, a connection of a pool of drv, to whoever opens
// the returned connector with [sql.OpenDB].
func NewConnector(c driver.Conn, drv driver.Driver) Connector { return Connector{conn: c, drv: drv} }

// Connect returns the lent connection, wrapped so that closing it leaves
// it open.
func (b Connector) Connect(context.Context) (driver.Conn, error) { return Conn{b.conn}, nil }

// Driver returns the pool's driver.
func (b Connector) Driver() driver.Driver { return b.drv }

// Lent returns the lent connection.
func (b Connector) Lent() driver.Conn { return b.conn }

// Conn forwards to the borrowed connection everything that
// database/sql looks for, except Close.
type Conn struct{ c driver.Conn }

// NewConn wraps c so that closing it leaves it open.
func NewConn(c driver.Conn) Conn { return Conn{c} }

// ErrUnsupported is returned by a Conn method whose context-aware form
// the lent connection lacks.
var ErrUnsupported = errors.New("borrowed connection: driver lacks a context-aware method")

func (b Conn) Prepare(q string) (driver.Stmt, error) { return b.c.Prepare(q) }
func (b Conn) Close() error                          { return nil }

func (b Conn) Begin() (driver.Tx, error) { return b.c.Begin() }

func (b Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c, ok := b.c.(driver.ConnBeginTx); ok {
		return c.BeginTx(ctx, opts)
	}
	return nil, ErrUnsupported
}

func (b Conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if c, ok := b.c.(driver.ConnPrepareContext); ok {
		return c.PrepareContext(ctx, q)
	}
	return b.c.Prepare(q)
}

func (b Conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if c, ok := b.c.(driver.ExecerContext); ok {
		return c.ExecContext(ctx, q, args)
	}
	return nil, driver.ErrSkip
}

func (b Conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if c, ok := b.c.(driver.QueryerContext); ok {
		return c.QueryContext(ctx, q, args)
	}
	return nil, driver.ErrSkip
}

func (b Conn) Ping(ctx context.Context) error {
	if c, ok := b.c.(driver.Pinger); ok {
		return c.Ping(ctx)
	}
	return nil
}

func (b Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := b.c.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
