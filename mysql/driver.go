package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	gomysql "github.com/go-sql-driver/mysql"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/mysqldb"
)

// Driver is the ledger's driver for a MySQL or MariaDB database reached
// through database/sql with github.com/go-sql-driver/mysql; its
// transactions are *[sql.Tx]. Build it with [New] and hand it to ledger.New.
// It holds the *[sql.DB], which stays the caller's to close (after the
// ledger), and the statements it prepares there (see Prepare).
type Driver struct {
	db *sql.DB
	// prepared is nil before Prepare and after Close.
	prepared atomic.Pointer[prepared]
	// mu orders installing prepared statements with Close, so that a
	// Prepare finishing in the background after Close releases its
	// statements instead of keeping them.
	mu     sync.Mutex
	closed bool // set by Close, cleared by Prepare; under mu
	// retryAt is when an operation that finds the statements missing
	// after a failed Prepare starts another, in Unix nanoseconds; 0 when
	// none is due (before Prepare, after it succeeded, after Close).
	retryAt atomic.Int64
	// preparing is set while a background Prepare runs.
	preparing atomic.Bool
	// pool is the Executor on db, made once.
	pool idriver.Executor
	// mariaDB is set once Prepare found the server to be MariaDB, whose
	// statements can carry a lock wait of their own (wait.go).
	mariaDB atomic.Bool
	// maxPacket is the server's max_allowed_packet as Prepare read it, 0
	// before (size.go).
	maxPacket atomic.Int64
}

var (
	_ idriver.Driver[*sql.Tx] = (*Driver)(nil)
	_ idriver.Preparer        = (*Driver)(nil)
	_ idriver.Batcher         = executor{}
)

// New returns the driver for db, a pool opened with the "mysql" driver of
// github.com/go-sql-driver/mysql (sql.Open("mysql", dsn), or
// sql.OpenDB(mysql.NewConnector(cfg))). The DSN needs no particular
// parameter: times are stored as integers, so parseTime and loc do not
// matter. It does not use db until ledger.New prepares the statements
// every request runs (see Prepare). A nil db is refused by ledger.New.
func New(db *sql.DB) *Driver {
	d := &Driver{db: db}
	d.pool = idriver.Interpreted(executor{d: d, db: db, pool: db, bound: true}, interpret)
	return d
}

// DB returns the Executor on the pool.
func (d *Driver) DB() idriver.Executor { return d.pool }

// TxExecutor returns the Executor inside tx.
func (d *Driver) TxExecutor(tx *sql.Tx) idriver.Executor {
	return idriver.Interpreted(executor{d: d, db: tx, tx: tx, own: new(owner)}, interpret)
}

// Begin begins a transaction on the pool, at the session's isolation
// level (REPEATABLE READ unless the server or the DSN says otherwise).
func (d *Driver) Begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	return tx, interpret(err)
}

// Commit commits tx.
func (d *Driver) Commit(_ context.Context, tx *sql.Tx) error { return interpret(tx.Commit()) }

// Rollback rolls tx back; nil when tx is already over.
func (d *Driver) Rollback(_ context.Context, tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return interpret(err)
	}
	return nil
}

// BeginLocks reports false: InnoDB locks rows as a transaction writes
// them.
func (d *Driver) BeginLocks() bool { return false }

// NilDB reports whether the driver has no *[sql.DB].
func (d *Driver) NilDB() bool { return d == nil || d.db == nil }

// IsNilTx reports whether tx is nil.
func (d *Driver) IsNilTx(tx *sql.Tx) bool { return tx == nil }

// SQL returns the *[sql.DB] the driver was built on.
func (d *Driver) SQL() *sql.DB { return d.db }

// executor runs the queries of queries/mysql through sqlc's package.
type executor struct {
	d    *Driver
	db   mysqldb.DBTX
	tx   *sql.Tx // nil on the pool
	pool *sql.DB // nil inside a transaction
	own  *owner  // whether tx is the pool's; nil on the pool
	// bound: the statements' lock waits end before ctx's deadline
	// (wait.go); set on the pool and in the driver's own transactions,
	// never in a caller's, whose settings are the caller's.
	bound bool
}

// q returns the queries to run, with the statements of hot prepared once
// the driver has prepared them.
func (e executor) q() *mysqldb.Queries {
	var db mysqldb.DBTX = e.db
	if p := e.d.prepared.Load(); p != nil {
		db = preparedDB{DBTX: e.db, tx: e.tx, p: p, own: e.own}
	} else {
		e.d.prepareLater()
	}
	if e.bound {
		db = boundedDB{DBTX: db, d: e.d}
	}
	return mysqldb.New(db)
}

func (e executor) Now(ctx context.Context) (int64, error) { return e.q().Now(ctx) }

// clock is now, or the server's clock when now is 0.
func (e executor) clock(ctx context.Context, now int64) (int64, error) {
	if now != 0 {
		return now, nil
	}
	return e.q().Now(ctx)
}

func (e executor) Get(ctx context.Context, p idriver.GetParams) (idriver.GetResult, error) {
	g, err := e.q().Get(ctx, mysqldb.GetParams{Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key)})
	if err != nil {
		return idriver.GetResult{}, err
	}
	// Get answers a miss too, with the clock and a NULL row.
	r, err := found(g)
	if err != nil {
		return idriver.GetResult{}, err
	}
	return idriver.GetResult{Now: at(p.Now, g.Now), Row: r}, nil
}

// at is now, or the server's clock read with a statement when now is 0.
func at(now, server int64) int64 {
	if now != 0 {
		return now
	}
	return server
}

// clockArg is the now argument of a statement that reads the server's
// clock itself when it is NULL.
func clockArg(now int64) sql.NullInt64 { return sql.NullInt64{Int64: now, Valid: now != 0} }

func (e executor) Complete(ctx context.Context, p idriver.CompleteParams) (idriver.CompleteResult, error) {
	if e.tx != nil {
		return e.complete(ctx, p, false)
	}
	return onPool(func() (idriver.CompleteResult, error) { return e.complete(ctx, p, true) })
}

// complete stores the outcome. report asks the statement to report the
// completed_at it stored, through the session's LAST_INSERT_ID (MySQL has
// no RETURNING): only on a connection whose session is the driver's own
// afterwards (the pool's, or a transaction that ends with the call), since
// it changes what LAST_INSERT_ID() answers a caller's later statements.
// The mark's time is not reported: a record that carries one is reported
// with Marked false.
func (e executor) complete(ctx context.Context, p idriver.CompleteParams, report bool) (idriver.CompleteResult, error) {
	if err := e.d.checkOutcome(p); err != nil {
		return idriver.CompleteResult{}, err
	}
	args := mysqldb.CompleteParams{
		Status:         sql.NullInt64{Int64: p.Status, Valid: true},
		Headers:        p.Headers,
		Body:           p.Body,
		Kind:           sql.NullString{String: p.Kind, Valid: p.Kind != ""},
		Now:            clockArg(p.Now),
		TtlMillis:      p.TTLMillis,
		Scope:          []byte(p.Scope),
		IdempotencyKey: []byte(p.Key),
		LeaseToken:     token(p.Token),
		Fence:          p.Fence,
	}
	if !report {
		n, err := e.q().Complete(ctx, args)
		return idriver.CompleteResult{OK: n == 1}, e.d.tooLarge(p, err)
	}
	res, err := e.q().CompleteReporting(ctx, mysqldb.CompleteReportingParams{
		Status: args.Status, Headers: args.Headers, Body: args.Body, Kind: args.Kind, Now: args.Now,
		TtlMillis: args.TtlMillis, Scope: args.Scope, IdempotencyKey: args.IdempotencyKey, LeaseToken: args.LeaseToken, Fence: args.Fence,
	})
	if err != nil {
		return idriver.CompleteResult{}, e.d.tooLarge(p, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return idriver.CompleteResult{}, err
	}
	// The OK packet carries the LAST_INSERT_ID the statement set:
	// completed_at * 2, plus 1 when the record carries a commit mark.
	v, err := res.LastInsertId()
	if err != nil || v <= 0 {
		return idriver.CompleteResult{OK: true}, nil // stored, with times unknown
	}
	return idriver.CompleteResult{OK: true, CompletedAt: v / 2, Marked: v%2 == 0}, nil
}

func (e executor) Release(ctx context.Context, p idriver.ReleaseParams) (bool, error) {
	if e.tx != nil {
		return e.release(ctx, p)
	}
	return onPool(func() (bool, error) { return e.release(ctx, p) })
}

func (e executor) release(ctx context.Context, p idriver.ReleaseParams) (bool, error) {
	n, err := e.q().Release(ctx, mysqldb.ReleaseParams{
		LeaseMillis: p.LeaseMillis,
		Scope:       []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token), Fence: p.Fence,
	})
	return n == 1, err
}

func (e executor) MarkCommitted(ctx context.Context, p idriver.MarkParams) (bool, error) {
	if e.tx != nil {
		return e.markCommitted(ctx, p)
	}
	return onPool(func() (bool, error) { return e.markCommitted(ctx, p) })
}

func (e executor) markCommitted(ctx context.Context, p idriver.MarkParams) (bool, error) {
	n, err := e.q().MarkCommitted(ctx, mysqldb.MarkCommittedParams{
		Now: clockArg(p.Now), LeaseMillis: p.LeaseMillis,
		Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token), Fence: p.Fence,
	})
	if err != nil || n == 1 {
		return n == 1, err
	}
	// No row changed: the lease is gone, or the mark was already there.
	return e.held(ctx, p.LeaseParams)
}

// held reports whether p's lease holds, for an UPDATE that changed no row:
// MySQL counts the rows an UPDATE changes, not those it matched.
func (e executor) held(ctx context.Context, p idriver.LeaseParams) (bool, error) {
	n, err := e.q().Held(ctx, mysqldb.HeldParams{
		Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token), Fence: p.Fence,
	})
	return n == 1, err
}

func (e executor) Abandon(ctx context.Context, p idriver.LeaseParams) error {
	if e.tx != nil {
		return e.abandon(ctx, p)
	}
	_, err := onPool(func() (struct{}, error) { return struct{}{}, e.abandon(ctx, p) })
	return err
}

func (e executor) abandon(ctx context.Context, p idriver.LeaseParams) error {
	return e.q().Abandon(ctx, mysqldb.AbandonParams{
		Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token),
	})
}

func (e executor) Extend(ctx context.Context, p idriver.ExtendParams) (int64, bool, error) {
	if e.tx != nil {
		return e.extend(ctx, p)
	}
	type extended struct {
		until int64
		ok    bool
	}
	x, err := onPool(func() (extended, error) {
		until, ok, err := e.extend(ctx, p)
		return extended{until, ok}, err
	})
	return x.until, x.ok, err
}

func (e executor) extend(ctx context.Context, p idriver.ExtendParams) (int64, bool, error) {
	now, err := e.clock(ctx, p.Now)
	if err != nil {
		return 0, false, err
	}
	until := now + p.LeaseMillis
	lease := idriver.LeaseParams{Scope: p.Scope, Key: p.Key, Token: p.Token, Fence: p.Fence}
	n, err := e.q().Extend(ctx, mysqldb.ExtendParams{
		LeaseExpiresAt: until,
		Scope:          []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token), Fence: p.Fence,
	})
	if err != nil {
		return 0, false, err
	}
	if n == 0 {
		// The lease already ended at until (an extension in the same
		// millisecond), or it is gone.
		ok, err := e.held(ctx, lease)
		if err != nil || !ok {
			return 0, false, err
		}
	}
	return until, true, nil
}

// PurgeBatch always starts from the head of the expiry index (Last 0):
// MySQL's DELETE cannot return the rows it deleted, and InnoDB's own purge
// thread removes the index entries of deleted rows in the background,
// where PostgreSQL leaves them to VACUUM (not measured at scale on MySQL).
func (e executor) PurgeBatch(ctx context.Context, p idriver.PurgeBatchParams) (idriver.PurgeBatchResult, error) {
	batch := func() (int64, error) {
		return e.q().PurgeBatch(ctx, mysqldb.PurgeBatchParams{Now: p.Now, Limit: int32(min(p.Limit, math.MaxInt32))})
	}
	var (
		n   int64
		err error
	)
	if e.tx != nil {
		n, err = batch()
	} else {
		n, err = onPool(batch)
	}
	return idriver.PurgeBatchResult{Deleted: n}, err
}

func (e executor) Stats(ctx context.Context, now int64) (idriver.StatsResult, error) {
	r, err := e.q().Stats(ctx, mysqldb.StatsParams{Now: now})
	if err != nil {
		return idriver.StatsResult{}, err
	}
	return idriver.StatsResult{
		InFlight: r.InFlight, Completed: r.Completed, Released: r.Released, Expired: r.Expired, LeaseExpired: r.LeaseExpired,
		Committed: r.Committed, Oldest: r.OldestCreatedAt, Newest: r.NewestCreatedAt,
		OldestExpired: r.OldestExpiresAt,
	}, nil
}

func (e executor) FindKey(ctx context.Context, key string, limit int) ([]idriver.Row, error) {
	got, err := e.q().FindKey(ctx, mysqldb.FindKeyParams{IdempotencyKey: []byte(key), Limit: int32(min(limit, math.MaxInt32))})
	return rows(got), err
}

func (e executor) ListInFlight(ctx context.Context, limit int) ([]idriver.Row, error) {
	got, err := e.q().ListInFlight(ctx, int32(min(limit, math.MaxInt32)))
	return rows(got), err
}

func (e executor) Savepoint(ctx context.Context, name string) error {
	return e.exec(ctx, "SAVEPOINT "+name)
}

func (e executor) RollbackToSavepoint(ctx context.Context, name string) error {
	return e.exec(ctx, "ROLLBACK TO SAVEPOINT "+name)
}

func (e executor) ReleaseSavepoint(ctx context.Context, name string) error {
	return e.exec(ctx, "RELEASE SAVEPOINT "+name)
}

// errNoTx is the error of a savepoint statement on the pool.
var errNoTx = errors.New("mysql: savepoint outside a transaction")

func (e executor) exec(ctx context.Context, stmt string) error {
	if e.tx == nil {
		return errNoTx
	}
	_, err := e.tx.ExecContext(ctx, stmt)
	return err
}

func rows(got []mysqldb.IdempotencyLedger) []idriver.Row {
	if len(got) == 0 {
		return nil
	}
	out := make([]idriver.Row, len(got))
	for i, g := range got {
		out[i] = row(g)
	}
	return out
}

// row is the driver's one mapping of a stored row; NULLs read as zero
// values (driver.Row), a NULL headers as nil.
func row(g mysqldb.IdempotencyLedger) idriver.Row {
	return idriver.Row{
		Scope: string(g.Scope), Key: string(g.Key), Fingerprint: g.Fingerprint, State: g.State,
		LeaseToken: string(g.LeaseToken), LeaseExpiresAt: g.LeaseExpiresAt.Int64, Fence: g.Fence,
		Status: g.Status.Int64, Headers: g.Headers, Body: emptyNil(g.Body), CreatedAt: g.CreatedAt,
		CompletedAt: g.CompletedAt.Int64, ExpiresAt: g.ExpiresAt, CommittedAt: g.CommittedAt.Int64,
		Kind: g.Kind.String, Failures: g.Failures,
	}
}

// found is row for Get's answer, whose row columns are all NULL when the
// key has no row: nil then. Get's columns are aggregates, which sqlc leaves
// untyped (queries/mysql): each is converted here as database/sql's Scan
// would, from what go-sql-driver returns in either protocol (int64, or the
// digits as []byte; []byte for the binary strings and state), its []byte
// copied, since the driver may reuse its buffer for the next row.
func found(g mysqldb.GetRow) (*idriver.Row, error) {
	if g.State == nil {
		return nil, nil
	}
	var c converter
	r := idriver.Row{
		Scope: string(c.bytes(g.Scope)), Key: string(c.bytes(g.Key)), Fingerprint: c.bytes(g.Fingerprint),
		State: string(c.bytes(g.State)), LeaseToken: string(c.bytes(g.LeaseToken)),
		LeaseExpiresAt: c.int(g.LeaseExpiresAt), Fence: c.int(g.Fence), Status: c.int(g.Status),
		Headers: c.bytes(g.Headers), Body: emptyNil(c.bytes(g.Body)), CreatedAt: c.int(g.CreatedAt),
		CompletedAt: c.int(g.CompletedAt), ExpiresAt: c.int(g.ExpiresAt), CommittedAt: c.int(g.CommittedAt),
		Kind: string(c.bytes(g.Kind)), Failures: c.int(g.Failures),
	}
	if c.err != nil {
		return nil, fmt.Errorf("mysql: read the record: %w", c.err)
	}
	return &r, nil
}

// converter converts Get's untyped columns, keeping the first error.
type converter struct{ err error }

// bytes is v as bytes, copied; nil for NULL.
func (c *converter) bytes(v any) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		return bytes.Clone(v)
	case string:
		return []byte(v)
	}
	if c.err == nil {
		c.err = fmt.Errorf("a binary column read as %T", v)
	}
	return nil
}

// int is v as an integer; 0 for NULL (as driver.Row reads NULLs).
func (c *converter) int(v any) int64 {
	switch v := v.(type) {
	case nil:
		return 0
	case int64:
		return v
	case []byte:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil && c.err == nil {
			c.err = err
		}
		return n
	}
	if c.err == nil {
		c.err = fmt.Errorf("an integer column read as %T", v)
	}
	return 0
}

// emptyNil is b, or nil when b is empty: a body stored empty reads as nil,
// as on the other engines.
func emptyNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// token is a lease token as a statement's argument, never NULL.
func token(t string) []byte {
	if t == "" {
		return []byte{}
	}
	return []byte(t)
}

// isDuplicate reports whether err is MySQL's duplicate-key error (1062).
func isDuplicate(err error) bool {
	var my *gomysql.MySQLError
	return errors.As(err, &my) && my.Number == erDupEntry
}

// isDeadlock reports whether err is InnoDB's deadlock error (1213).
func isDeadlock(err error) bool {
	var my *gomysql.MySQLError
	return errors.As(err, &my) && my.Number == erLockDeadlock
}
