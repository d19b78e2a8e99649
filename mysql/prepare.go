package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/mysqldb"
)

// hot are the statements the driver prepares: those of every request (a
// claim's read, its INSERT in both forms, the outcome's UPDATE) and those
// of every request whose handler has steps (a step's record, once per step,
// inside the handler's transaction for a database step; the steps'
// deletion after the outcome). Prepared, each is one round trip
// (COM_STMT_EXECUTE) instead of two (prepare, then execute) under
// go-sql-driver's default DSN. The others, rare, run as text: every
// prepared statement costs the server memory on every connection of every
// pool (max_prepared_stmt_count, 16,382 by default, bounds them all), and
// six per connection leave room. On MariaDB the INSERT ... SELECT and the
// UPDATE are prepared twice more, as the texts with the lock waits that
// lease mode runs them with (wait.go): ten.
// (Lease mode's claims check a valid_until, so they take the INSERT ...
// SELECT; the INSERT ... VALUES runs bounded only for a claim that brings
// its own clock, and then as text.)
var hot = [...]string{mysqldb.Get, mysqldb.ClaimInsert, mysqldb.ClaimInsertValues, mysqldb.Complete, mysqldb.StepRecord, mysqldb.StepsDelete}

// prepared is the set of statements prepared on the pool, by their text.
type prepared struct {
	stmts map[string]*sql.Stmt
}

func (p *prepared) close() error {
	var errs []error
	for _, s := range p.stmts {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Prepare prepares the statements every request runs on the pool, once:
// ledger.New calls it, never an operation (a pool of one connection inside
// a transaction would wait for ever). database/sql prepares each again on
// any other connection of the pool the first time it runs there, also
// inside a caller's *[sql.Tx] of this pool, and keeps it per connection.
// A missing table fails it, marked driver.ErrNotMigrated, as on SQLite.
// Any other failure (the server cannot be reached) does not: the ledger
// then runs its statements unprepared, so that a program that starts while
// its database is down still starts (and answers idemhttp's FailOpen as it
// would), and the first operation at least [PrepareRetry] later prepares
// them again in the background, until that succeeds or Close is called.
// A nil db is an error.
func (d *Driver) Prepare(ctx context.Context) error {
	if d.NilDB() {
		return errors.New("mysql: nil *sql.DB")
	}
	d.mu.Lock()
	d.closed = false
	d.mu.Unlock()
	return d.prepare(ctx)
}

// prepare is Prepare without reopening a closed driver: what a background
// attempt runs, so that a Close during it wins.
func (d *Driver) prepare(ctx context.Context) error {
	var (
		version string
		packet  int64
	)
	if err := d.db.QueryRowContext(ctx, "SELECT VERSION(), @@max_allowed_packet").Scan(&version, &packet); err == nil {
		d.mariaDB.Store(strings.Contains(version, "MariaDB"))
		d.maxPacket.Store(packet)
	}
	texts := hot[:]
	if d.mariaDB.Load() {
		// The texts the lease-mode statements of a request run as on
		// MariaDB, with their lock waits (wait.go).
		for _, q := range hot {
			if waits[q] && q != mysqldb.ClaimInsertValues {
				texts = append(texts, bounded(q, 0), bounded(q, 1))
			}
		}
	}
	p := &prepared{stmts: make(map[string]*sql.Stmt, len(texts))}
	for _, q := range texts {
		s, err := d.db.PrepareContext(ctx, q)
		if err != nil {
			_ = p.close()
			if err = interpret(err); errors.Is(err, idriver.ErrNotMigrated) {
				return err
			}
			d.mu.Lock()
			if !d.closed {
				d.retryAt.Store(time.Now().Add(PrepareRetry).UnixNano())
			}
			d.mu.Unlock()
			return nil
		}
		p.stmts[q] = s
	}
	d.mu.Lock()
	if d.closed {
		// Closed while preparing in the background.
		d.mu.Unlock()
		return p.close()
	}
	old := d.prepared.Swap(p)
	d.retryAt.Store(0)
	d.mu.Unlock()
	if old != nil {
		_ = old.close()
	}
	return nil
}

// PrepareRetry is how long after a failed Prepare the driver prepares its
// statements again, in the background of the first operation that finds
// them missing; an attempt that fails waits as long again.
const PrepareRetry = 5 * time.Second

// prepareTimeout bounds a background Prepare: the operation that started
// it does not wait for it, but a pool whose connections are all taken
// would keep it waiting.
const prepareTimeout = 10 * time.Second

// prepareLater starts Prepare in the background when an earlier one failed
// and PrepareRetry has passed, one at a time.
func (d *Driver) prepareLater() {
	at := d.retryAt.Load()
	if at == 0 || time.Now().UnixNano() < at || !d.preparing.CompareAndSwap(false, true) {
		return
	}
	// The next attempt waits a full PrepareRetry, whatever this one does.
	d.retryAt.Store(time.Now().Add(PrepareRetry).UnixNano())
	go func() {
		defer d.preparing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
		defer cancel()
		_ = d.prepare(ctx)
	}()
}

// Close releases the prepared statements (on the server too, on every
// connection that prepared them); statements run unprepared afterwards.
// It never closes the *[sql.DB]. A second Close returns nil.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	d.retryAt.Store(0)
	p := d.prepared.Swap(nil)
	d.mu.Unlock()
	if p != nil {
		return p.close()
	}
	return nil
}

// preparedDB is the mysqldb.DBTX of an executor once statements are
// prepared: a statement of hot runs prepared, on the pool or, through
// Tx.StmtContext, on tx's connection; every other one runs on DBTX, the
// pool or tx, as text.
type preparedDB struct {
	mysqldb.DBTX
	tx  *sql.Tx // nil on the pool
	p   *prepared
	own *owner // nil on the pool
}

// owner remembers whether a caller's tx was begun on the driver's pool,
// the condition for Tx.StmtContext to take the pool's statements.
type owner struct{ yes atomic.Bool }

// owns reports whether tx was begun on the pool, asking it the first time:
// Tx.StmtContext answers a statement of another pool (or a finished
// transaction, or a cancelled ctx) with a Stmt whose every method returns
// that error, Close included, and runs nothing; an accepted one closes with
// nil (having prepared s on tx's connection, when it was not yet, which the
// statement about to run needs anyway). Whatever made it refuse, the
// unprepared path then does the right thing: it runs, or fails with the
// same cause. Only a yes is remembered.
func (o *owner) owns(ctx context.Context, tx *sql.Tx, s *sql.Stmt) bool {
	if o.yes.Load() {
		return true
	}
	if tx.StmtContext(ctx, s).Close() != nil {
		return false
	}
	o.yes.Store(true)
	return true
}

// stmt returns the prepared statement of query to run, or nil to run it
// as text.
func (x preparedDB) stmt(ctx context.Context, query string) *sql.Stmt {
	s := x.p.stmts[query]
	switch {
	case s == nil:
		return nil
	case x.tx == nil:
		return s
	case !x.own.owns(ctx, x.tx, s):
		return nil
	}
	return x.tx.StmtContext(ctx, s)
}

func (x preparedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := x.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return x.DBTX.ExecContext(ctx, query, args...)
}

func (x preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := x.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return x.DBTX.QueryContext(ctx, query, args...)
}

func (x preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := x.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return x.DBTX.QueryRowContext(ctx, query, args...)
}
