package sqlite

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
)

// gateConnector opens modernc.org/sqlite connections that pass the pool's
// gate before they write. database/sql closes it (Close) when it closes
// the pool.
type gateConnector struct {
	base driver.Connector
	gate *gate
}

// Close stops the pool's checkpointer.
func (c gateConnector) Close() error {
	c.gate.ckp.close()
	return nil
}

func (c gateConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &gateConn{Conn: conn, gate: c.gate}, nil
}

func (c gateConnector) Driver() driver.Driver { return c.base.Driver() }

// gateConn is one connection; database/sql uses it from one goroutine at a
// time, except that it may roll a transaction back from another when the
// transaction's context ends, hence the mutex.
//
// A connection holds the slot from BEGIN to COMMIT or ROLLBACK of a write
// transaction, whether begun through database/sql (BeginTx) or by executing
// BEGIN itself (the migrations do, on a pinned connection), and for the run
// of each writing statement outside a transaction. A read-only transaction
// (sql.TxOptions.ReadOnly) begins deferred and never takes it; nor do reads
// outside a transaction.
type gateConn struct {
	driver.Conn
	gate *gate

	mu sync.Mutex
	// tx: a transaction is open (so statements pass freely); held: this
	// connection holds the slot; broken: a setting of the connection could
	// not be set back (see restartCheckpoint), so the pool drops it.
	tx, held, broken bool
}

var (
	_ driver.ConnBeginTx        = (*gateConn)(nil)
	_ driver.ConnPrepareContext = (*gateConn)(nil)
	_ driver.ExecerContext      = (*gateConn)(nil)
	_ driver.QueryerContext     = (*gateConn)(nil)
	_ driver.Pinger             = (*gateConn)(nil)
	_ driver.SessionResetter    = (*gateConn)(nil)
	_ driver.Validator          = (*gateConn)(nil)
)

// Unwrap returns modernc.org/sqlite's connection (msqlite.Limit and others
// look through wrappers with it).
func (c *gateConn) Unwrap() driver.Conn { return c.Conn }

func (c *gateConn) inTx() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tx
}

// enter takes the slot for a write that begins a transaction (begin true,
// held until end) or for one statement (begin false, until its end).
func (c *gateConn) enter(ctx context.Context, begin bool) error {
	if err := c.gate.acquire(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.held = true
	c.tx = c.tx || begin
	c.mu.Unlock()
	return nil
}

// end leaves the transaction and, if this connection holds the slot,
// counts what it wrote to the WAL (see checkpoint.go) and gives the slot
// back.
func (c *gateConn) end() {
	if !c.leave() {
		return
	}
	c.afterWrite()
	c.gate.release()
}

// leave leaves the transaction and reports whether this connection held
// the slot, which it must then give back.
func (c *gateConn) leave() (held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	held = c.held
	c.held, c.tx = false, false
	return held
}

func (c *gateConn) markBroken() {
	c.mu.Lock()
	c.broken = true
	c.mu.Unlock()
}

func (c *gateConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.ReadOnly {
		// modernc begins a read-only transaction deferred: it takes no
		// write lock, and must not write.
		tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.tx = true
		c.mu.Unlock()
		return gateTx{tx, c}, nil
	}
	if err := c.enter(ctx, true); err != nil {
		return nil, err
	}
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		c.end()
		return nil, err
	}
	return gateTx{tx, c}, nil
}

// Begin is database/sql's fallback; it never calls it while BeginTx exists.
func (c *gateConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// gateTx ends its connection's transaction, and gives the slot back, when
// it commits or rolls back, whatever the outcome: modernc leaves no
// transaction open after either.
type gateTx struct {
	driver.Tx
	c *gateConn
}

func (t gateTx) Commit() error {
	defer t.c.end()
	return t.Tx.Commit()
}

func (t gateTx) Rollback() error {
	defer t.c.end()
	return t.Tx.Rollback()
}

// guard runs a statement: freely inside a transaction or for a read;
// otherwise holding the slot, and for a BEGIN or COMMIT executed as text
// taking or giving it back for the transaction.
func (c *gateConn) guard(ctx context.Context, query string, run func() error) error {
	if c.inTx() {
		err := run()
		if kind(query) == stmtEnd {
			// COMMIT, END or ROLLBACK as text: whatever the outcome, a
			// transaction that is still open is ended by the pool (see
			// IsValid), so give the slot back now.
			c.end()
		}
		return err
	}
	switch kind(query) {
	case stmtRead:
		return run()
	case stmtBegin:
		if err := c.enter(ctx, true); err != nil {
			return err
		}
		err := run()
		if err != nil {
			c.end()
		}
		return err
	default:
		if err := c.enter(ctx, false); err != nil {
			return err
		}
		defer c.end()
		if kind(query) == stmtCheckpoint {
			c.gate.wal.ckpt.Lock()
			defer c.gate.wal.ckpt.Unlock()
		}
		return run()
	}
}

func (c *gateConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	var res driver.Result
	err := c.guard(ctx, query, func() (err error) {
		res, err = c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
		return err
	})
	return res, err
}

// QueryContext: a writing query (UPDATE … RETURNING) outside a transaction
// holds the slot until its rows are closed, since SQLite holds the lock
// until the statement is reset.
func (c *gateConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.query(ctx, query, func() (driver.Rows, error) {
		return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	})
}

func (c *gateConn) query(ctx context.Context, query string, run func() (driver.Rows, error)) (driver.Rows, error) {
	if c.inTx() || kind(query) == stmtRead {
		return run()
	}
	k := kind(query)
	if k != stmtWrite && k != stmtCheckpoint {
		// BEGIN or COMMIT through Query: rare enough to take the Exec
		// path's rules.
		var rows driver.Rows
		err := c.guard(ctx, query, func() (err error) { rows, err = run(); return err })
		return rows, err
	}
	if err := c.enter(ctx, false); err != nil {
		return nil, err
	}
	r := &gateRows{c: c, ckpt: k == stmtCheckpoint}
	if r.ckpt {
		c.gate.wal.ckpt.Lock()
	}
	rows, err := run()
	if err != nil {
		r.done()
		return nil, err
	}
	r.Rows = rows
	return r, nil
}

// gateRows gives the slot back when closed, and the pool's checkpoint lock
// before it if it holds that too.
type gateRows struct {
	driver.Rows
	c    *gateConn
	ckpt bool
	once sync.Once
}

func (r *gateRows) Close() error {
	err := r.Rows.Close()
	r.once.Do(r.done)
	return err
}

func (r *gateRows) done() {
	if r.ckpt {
		r.c.gate.wal.ckpt.Unlock()
	}
	r.c.end()
}

func (c *gateConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &gateStmt{Stmt: s, c: c, query: query}, nil
}

// Prepare is database/sql's fallback; it never calls it while
// PrepareContext exists.
func (c *gateConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *gateConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *gateConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid reports false for a connection that is back in the pool with a
// transaction begun as text still open (and the slot held): database/sql
// then closes it, which rolls the transaction back and gives the slot back.
// So too for a connection marked broken.
func (c *gateConn) IsValid() bool {
	c.mu.Lock()
	bad := c.tx || c.broken
	c.mu.Unlock()
	if bad {
		return false
	}
	return c.Conn.(driver.Validator).IsValid()
}

// Close closes the connection and gives back the slot it may hold; the
// closed connection has nothing left to count or checkpoint.
func (c *gateConn) Close() error {
	err := c.Conn.Close()
	if c.leave() {
		c.gate.release()
	}
	return err
}

// gateStmt is a prepared statement of a gateConn; it follows the same rules
// as the connection's own Exec and Query.
type gateStmt struct {
	driver.Stmt
	c     *gateConn
	query string
}

var (
	_ driver.StmtExecContext  = (*gateStmt)(nil)
	_ driver.StmtQueryContext = (*gateStmt)(nil)
)

func (s *gateStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	var res driver.Result
	err := s.c.guard(ctx, s.query, func() (err error) {
		res, err = s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
		return err
	})
	return res, err
}

func (s *gateStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.query(ctx, s.query, func() (driver.Rows, error) {
		return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	})
}

// Exec and Query are database/sql's fallbacks; it never calls them while
// the context forms exist.
func (s *gateStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *gateStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// stmtKind is what a statement outside a transaction asks of the gate.
type stmtKind int

const (
	stmtWrite stmtKind = iota // holds the slot while it runs
	stmtRead                  // passes freely
	stmtBegin                 // takes the slot until the transaction ends
	stmtEnd                   // COMMIT, END or ROLLBACK (not ROLLBACK TO)
	// stmtCheckpoint is PRAGMA wal_checkpoint: a write that also waits
	// for the pool's own checkpoint to finish, since SQLite would fail it
	// at once with SQLITE_BUSY meanwhile (see wal.ckpt).
	stmtCheckpoint
)

// kind classifies a statement by its first keyword, after comments (sqlc
// puts "-- name: …" first). Anything not known to be a read counts as a
// write: a statement that waits for the slot needlessly costs a little
// order, one that skips it may wait in SQLite's busy handler again.
func kind(query string) stmtKind {
	q := skipComments(query)
	word := q
	if i := strings.IndexFunc(q, func(r rune) bool { return !isWordRune(r) }); i >= 0 {
		word = q[:i]
	}
	switch strings.ToUpper(word) {
	case "SELECT", "EXPLAIN", "VALUES":
		return stmtRead
	case "PRAGMA":
		// PRAGMA name, or name(arg) for the reads that take one
		// (table_info); one that sets a value (=) or acts
		// (incremental_vacuum(N), wal_checkpoint(…)) counts as a write.
		rest := strings.ToLower(q[len(word):])
		if strings.Contains(rest, "wal_checkpoint") {
			return stmtCheckpoint
		}
		if strings.Contains(rest, "=") || strings.Contains(rest, "vacuum") || strings.Contains(rest, "checkpoint") || strings.Contains(rest, "optimize") {
			return stmtWrite
		}
		return stmtRead
	case "BEGIN":
		return stmtBegin
	case "COMMIT", "END":
		return stmtEnd
	case "ROLLBACK":
		if r := strings.ToUpper(skipComments(q[len(word):])); strings.HasPrefix(r, "TO") {
			return stmtWrite
		}
		return stmtEnd
	}
	return stmtWrite
}

func isWordRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// skipComments drops leading white space, "--" line comments and "/* */"
// block comments.
func skipComments(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n\f")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		default:
			return q
		}
	}
}

// newConnector returns modernc.org/sqlite's connector for dsn behind a gate
// whose waits last at most wait.
//
// The pool checkpoints the WAL itself (see checkpoint.go), so SQLite's
// automatic checkpoint is off on its connections.
func newConnector(dsn string, wait time.Duration) (driver.Connector, error) {
	base, err := msqlite.NewConnector(dsn + "&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return nil, err
	}
	g := newGate(wait)
	g.ckp = newCheckpointer(base, g)
	return gateConnector{base: base, gate: g}, nil
}
