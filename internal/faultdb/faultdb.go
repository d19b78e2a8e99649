// Package faultdb opens SQLite databases through a wrapper of the
// modernc.org/sqlite driver that makes a chosen statement fail, or cancels
// a context just before it runs, so that tests can prove what the ledger
// and the middleware do when the store breaks mid-operation. It is for
// tests only.
//
// Statements are counted at the driver: every Exec and Query (with or
// without a transaction), every BEGIN and every COMMIT. Rollbacks are not
// counted and never fail, so a failed operation can always clean up, and
// the statements of a prepared *[sql.Stmt] are not seen at all (the ledger
// prepares only when Config.DB is set: leave it unset in fault tests).
package faultdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/idemledger/idemledger/sqlite"
)

// ErrInjected is the error a Plan makes a statement return unless FailAt is
// given another.
var ErrInjected = errors.New("faultdb: injected fault")

// Plan says which statement, counted from the last Arm, fails or has its
// context cancelled. The zero Plan is disarmed: nothing fails. A Plan is
// safe for concurrent use; one Plan may serve several pools.
type Plan struct {
	mu       sync.Mutex
	armed    bool
	n        int
	failAt   int
	err      error
	cancelAt int
	// cancelAfter is CancelAfter's n; 0 when unset.
	cancelAfter int
	// failAfter is FailAfter's n, with err; 0 when unset.
	failAfter int
	cancel    context.CancelFunc
	fired     bool
	seen      []string
}

// FailAt arms the plan: the n-th statement from now (1-based) returns err
// ([ErrInjected] when err is nil) without running. A failed COMMIT rolls the
// transaction back first, as a commit that fails in SQLite does.
func (p *Plan) FailAt(n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	p.arm(func() { p.failAt, p.err = n, err })
}

// CancelAt arms the plan: cancel is called just before the n-th statement
// from now runs, and the statement then runs with its (cancelled) context.
func (p *Plan) CancelAt(n int, cancel context.CancelFunc) {
	p.arm(func() { p.cancelAt, p.cancel = n, cancel })
}

// CancelAfter arms the plan: the n-th statement from now runs to its end
// with its context intact, then cancel is called and the statement reports
// the context's error instead of its result. That is what the modernc
// driver does when the context ends while a statement runs: an autocommit
// write may have committed although the caller sees an error.
func (p *Plan) CancelAfter(n int, cancel context.CancelFunc) {
	p.arm(func() { p.cancelAfter, p.cancel = n, cancel })
}

// FailAfter arms the plan: the n-th statement from now (1-based) runs to its
// end, then reports err ([ErrInjected] when err is nil) instead of its
// result: an I/O error after the write, or a reply that never arrived, so
// that the caller cannot tell that the statement ran.
func (p *Plan) FailAfter(n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	p.arm(func() { p.failAfter, p.err = n, err })
}

// Count arms the plan to count statements without failing any.
func (p *Plan) Count() { p.arm(func() {}) }

func (p *Plan) arm(set func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.n, p.failAt, p.failAfter, p.err, p.cancelAt, p.cancelAfter, p.cancel, p.fired, p.seen = true, 0, 0, 0, nil, 0, 0, nil, false, nil
	set()
}

// Disarm stops counting and failing: the fault has cleared.
func (p *Plan) Disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = false
}

// Fired reports whether the planned fault (failure or cancellation) has
// happened since the last Arm.
func (p *Plan) Fired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired
}

// Seen returns the statements counted since the last Arm, in order: the
// SQL text, "BEGIN" or "COMMIT".
func (p *Plan) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// step counts one statement and says whether it fails, and returns what
// the statement calls with its context after it ran without error: the
// error it reports instead, nil when no fault is planned after it.
func (p *Plan) step(what string) (after func(ctx context.Context, _ error) error, fail error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	after = ran
	if !p.armed {
		return after, nil
	}
	p.n++
	p.seen = append(p.seen, what)
	if p.n == p.cancelAt {
		p.fired = true
		p.cancel()
	}
	if p.n == p.cancelAfter {
		cancel := p.cancel
		after = func(ctx context.Context, _ error) error {
			p.mu.Lock()
			p.fired = true
			p.mu.Unlock()
			cancel()
			return ctx.Err()
		}
	}
	if p.n == p.failAfter {
		err := p.err
		after = func(context.Context, error) error {
			p.mu.Lock()
			p.fired = true
			p.mu.Unlock()
			return err
		}
	}
	if p.n == p.failAt {
		p.fired = true
		return after, p.err
	}
	return after, nil
}

// ran is after when no fault is planned after the statement.
func ran(context.Context, error) error { return nil }

// Open opens the SQLite file at path as [sqlite.Open] does with its default
// settings (the DSN of [sqlite.DSN], a pool of [sqlite.DefaultMaxOpenConns]),
// through the fault-injecting wrapper driven by p. The caller closes the
// pool.
func Open(path string, p *Plan) (*sql.DB, error) {
	return OpenDSN(sqlite.DSN(path), p)
}

// OpenDSN is Open with a modernc.org/sqlite DSN of the caller's choice (a
// read-only one, for example).
func OpenDSN(dsn string, p *Plan) (*sql.DB, error) {
	probe, err := sql.Open(sqlite.DriverName, "")
	if err != nil {
		return nil, fmt.Errorf("faultdb: %w", err)
	}
	inner := probe.Driver()
	probe.Close()
	db := sql.OpenDB(&connector{dsn: dsn, inner: inner, plan: p})
	db.SetMaxOpenConns(sqlite.DefaultMaxOpenConns)
	db.SetMaxIdleConns(sqlite.DefaultMaxOpenConns)
	return db, nil
}

type connector struct {
	dsn   string
	inner driver.Driver
	plan  *Plan
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	cn, err := c.inner.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &conn{inner: cn, plan: c.plan}, nil
}

func (c *connector) Driver() driver.Driver { return c.inner }

// conn forwards to the modernc connection, counting statements. It
// implements the context-aware interfaces that the modernc connection
// does, so database/sql takes the same paths as without the wrapper.
type conn struct {
	inner driver.Conn
	plan  *Plan
}

var (
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

func (c *conn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *conn) Close() error { return c.inner.Close() }

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	after, err := c.plan.step("BEGIN")
	if err != nil {
		return nil, err
	}
	t, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := after(ctx, nil); err != nil {
		t.Rollback()
		return nil, err
	}
	return &tx{inner: t, plan: c.plan}, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	after, err := c.plan.step(query)
	if err != nil {
		return nil, err
	}
	res, err := c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if err := after(ctx, nil); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	after, err := c.plan.step(query)
	if err != nil {
		return nil, err
	}
	rows, err := c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if err := after(ctx, nil); err != nil {
		rows.Close()
		return nil, err
	}
	return rows, nil
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue lets the default conversions apply, as for the modernc
// connection, which has no checker of its own.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.inner.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type tx struct {
	inner driver.Tx
	plan  *Plan
}

func (t *tx) Commit() error {
	after, err := t.plan.step("COMMIT")
	if err != nil {
		return errors.Join(err, t.inner.Rollback())
	}
	if err := t.inner.Commit(); err != nil {
		return err
	}
	// A commit has no context of its own: one that ends after it has run
	// changes nothing of its outcome.
	return after(context.Background(), nil)
}

func (t *tx) Rollback() error { return t.inner.Rollback() }
