package pgxv5

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/internal/pgmigrate"
	"github.com/idemledger/idemledger/internal/pgxdb"
	"github.com/idemledger/idemledger/schema"
)

// DB is what the driver needs of the database: *pgxpool.Pool and
// *pgx.Conn have it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Driver is the ledger's driver for PostgreSQL through pgx's native API;
// its transactions are pgx.Tx. Build it with [New] and hand it to
// ledger.New. It holds nothing but the database, which stays the caller's
// to close.
type Driver struct {
	db   DB
	mode batchMode
	// pool is the Executor on db, made once.
	pool idriver.Executor
}

var _ idriver.Driver[pgx.Tx] = (*Driver)(nil)

// New returns the driver for db: a *pgxpool.Pool (safe for concurrent use),
// or a *pgx.Conn (one goroutine at a time, as the connection itself). It
// does not use db until an operation does. A nil db is refused by
// ledger.New.
func New(db DB) *Driver {
	d := &Driver{db: db, mode: modeOf(db)}
	d.pool = idriver.Interpreted(executor{db: db}, pgerr.Interpret)
	return d
}

// DB returns the Executor on the pool.
func (d *Driver) DB() idriver.Executor { return d.pool }

// TxExecutor returns the Executor inside tx.
func (d *Driver) TxExecutor(tx pgx.Tx) idriver.Executor {
	return idriver.Interpreted(executor{db: tx, tx: tx, mode: d.mode}, pgerr.Interpret)
}

// Begin begins a transaction on the database, at the server's default
// isolation level. Where the driver batches Mutate's statements (see the
// package doc, Round trips) it takes a connection and defers the BEGIN to
// the transaction's first statement, which carries it when that is
// Mutate's claim; the transaction behaves as pgx's own otherwise.
func (d *Driver) Begin(ctx context.Context) (pgx.Tx, error) {
	if d.mode != batchNone {
		switch db := d.db.(type) {
		case *pgxpool.Pool:
			c, err := db.Acquire(ctx)
			if err != nil {
				return nil, pgerr.Interpret(err)
			}
			return &deferredTx{conn: c.Conn(), release: c.Release, mode: d.mode}, nil
		case *pgx.Conn:
			return &deferredTx{conn: db, mode: d.mode}, nil
		}
	}
	tx, err := d.db.Begin(ctx)
	return tx, pgerr.Interpret(err)
}

// Commit commits tx.
func (d *Driver) Commit(ctx context.Context, tx pgx.Tx) error {
	return pgerr.Interpret(txDone(tx.Commit(ctx)))
}

// Rollback rolls tx back; nil when tx is already over.
func (d *Driver) Rollback(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

// BeginLocks reports false: a PostgreSQL transaction locks rows as it
// writes them.
func (d *Driver) BeginLocks() bool { return false }

// IsNilTx reports whether tx is nil.
func (d *Driver) IsNilTx(tx pgx.Tx) bool { return tx == nil }

// NilDB reports whether the driver has no database (New(nil), or a nil
// *pgxpool.Pool or *pgx.Conn).
func (d *Driver) NilDB() bool {
	if d == nil {
		return true
	}
	switch db := d.db.(type) {
	case nil:
		return true
	case *pgxpool.Pool:
		return db == nil
	case *pgx.Conn:
		return db == nil
	}
	return false
}

// Migration returns golang-migrate's pgx/v5 driver, for package schema,
// over a database/sql view of the database: for a *pgxpool.Pool, one
// connection of the pool (stdlib.OpenDBFromPool); for a *pgx.Conn, a new
// connection with the same configuration (a migration never runs on the
// caller's session), closed at the end.
func (d *Driver) Migration() schema.Migration {
	m := pgmigrate.Migration(nil)
	m.With = func(ctx context.Context, table string, read bool, f func(database.Driver) error) error {
		var db *sql.DB
		switch c := d.db.(type) {
		case *pgxpool.Pool:
			db = stdlib.OpenDBFromPool(c)
		case *pgx.Conn:
			db = stdlib.OpenDB(*c.Config())
		default:
			return fmt.Errorf("pgxv5: migrate needs a *pgxpool.Pool or a *pgx.Conn, not %T", d.db)
		}
		// Closing this *sql.DB gives the pool's connection back (or
		// closes the new connection); the caller's database stays open.
		defer db.Close()
		return pgmigrate.Migration(func() *sql.DB { return db }).With(ctx, table, read, f)
	}
	return m
}

// executor runs the queries of queries/postgres through sqlc's pgx/v5
// package.
type executor struct {
	db   pgxdb.DBTX
	tx   pgx.Tx    // nil on the pool
	mode batchMode // how Mutate's steps are batched in tx (batch.go)
}

var _ idriver.Batcher = executor{}

// at is the @now parameter of the queries: NULL for the server's clock.
func at(now int64) pgtype.Int8 { return pgtype.Int8{Int64: now, Valid: now != 0} }

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }

// lockTimeout is the @lock_timeout parameter of a statement under ctx: on
// the pool, derived from ctx's deadline (see pgerr.LockTimeout); NULL
// inside a caller's transaction, whose settings are the caller's.
func (e executor) lockTimeout(ctx context.Context) pgtype.Text {
	if e.tx != nil {
		return pgtype.Text{}
	}
	ms, ok := pgerr.LockTimeout(ctx)
	return pgtype.Text{String: ms, Valid: ok}
}

// txDoneError is pgx.ErrTxClosed as the driver package asks: it matches
// sql.ErrTxDone too.
type txDoneError struct{ err error }

func (e txDoneError) Error() string        { return e.err.Error() }
func (e txDoneError) Unwrap() error        { return e.err }
func (e txDoneError) Is(target error) bool { return target == sql.ErrTxDone }

func txDone(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return txDoneError{err}
	}
	return err
}

func (e executor) Now(ctx context.Context) (int64, error) {
	n, err := pgxdb.New(e.db).Now(ctx)
	return n, txDone(err)
}

// Claim runs the one statement of queries/postgres (Claim): it reads the
// row and writes only when the row does not stand (through the function of
// migration 5, which the statement's plan skips otherwise), so a replay, an
// in-flight answer or a reused key costs one round trip and the server's
// cost of a plain read (see the query's comment for why that is safe). It returns the row it read, with the
// server's clock at the read, for the ledger to explain a lost claim.
func (e executor) Claim(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	r, err := pgxdb.New(e.db).Claim(ctx, pgxdb.ClaimParams{
		LockTimeout: e.lockTimeout(ctx),
		Scope:       a.Scope,
		Key:         a.Key,
		Fingerprint: a.Fingerprint,
		LeaseToken:  a.Token,
		LeaseMillis: a.LeaseMillis,
		TtlMillis:   a.TTLMillis,
		Now:         at(a.Now),
		Recover:     a.Recover,
		ValidUntil:  pgtype.Int8{Int64: a.ValidUntil, Valid: a.ValidUntil != 0},
	})
	if err != nil {
		return idriver.ClaimResult{}, txDone(err)
	}
	if r.Late {
		return idriver.ClaimResult{Late: true, Now: r.Now}, nil
	}
	switch r.State {
	case "won":
		return idriver.ClaimResult{Won: true, Fence: r.Fence, LeaseExpiresAt: r.LeaseExpiresAt, CommittedAt: r.CommittedAt, Failures: r.Failures}, nil
	case "":
		// A row committed after the statement's snapshot stood in the
		// way: the ledger reads it (Get).
		return idriver.ClaimResult{Now: r.Now}, nil
	}
	return idriver.ClaimResult{Now: r.Now, Row: &idriver.Row{
		Scope: a.Scope, Key: a.Key, Fingerprint: r.Fingerprint, State: r.State,
		LeaseToken: r.LeaseToken, LeaseExpiresAt: r.LeaseExpiresAt, Fence: r.Fence,
		Status: r.Status, Headers: r.Headers, Body: r.Body,
		CreatedAt: r.CreatedAt, CompletedAt: r.CompletedAt, ExpiresAt: r.ExpiresAt,
		CommittedAt: r.CommittedAt, Kind: r.Kind, Failures: r.Failures,
	}}, nil
}

func (e executor) Get(ctx context.Context, p idriver.GetParams) (idriver.GetResult, error) {
	g, err := pgxdb.New(e.db).Get(ctx, pgxdb.GetParams{Now: at(p.Now), Scope: p.Scope, Key: p.Key})
	if errors.Is(err, pgx.ErrNoRows) {
		return idriver.GetResult{}, nil
	}
	if err != nil {
		return idriver.GetResult{}, txDone(err)
	}
	r := row(g.IdempotencyLedger)
	return idriver.GetResult{Now: g.Now, Row: &r}, nil
}

func (e executor) Complete(ctx context.Context, p idriver.CompleteParams) (idriver.CompleteResult, error) {
	if err := pgerr.CheckOutcome(p); err != nil {
		return idriver.CompleteResult{}, err
	}
	got, err := pgxdb.New(e.db).Complete(ctx, pgxdb.CompleteParams{
		LockTimeout: e.lockTimeout(ctx),
		Status:      pgtype.Int8{Int64: p.Status, Valid: true},
		Headers:     p.Headers,
		Body:        p.Body,
		Kind:        pgtype.Text{String: p.Kind, Valid: p.Kind != ""},
		TtlMillis:   p.TTLMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return idriver.CompleteResult{}, nil // the lease did not hold
	}
	if err != nil {
		return idriver.CompleteResult{}, pgerr.TooLarge(p, txDone(err))
	}
	return idriver.CompleteResult{OK: true, CompletedAt: got.CompletedAt.Int64, CommittedAt: got.CommittedAt.Int64, Marked: true}, nil
}

func (e executor) Release(ctx context.Context, p idriver.ReleaseParams) (bool, error) {
	n, err := pgxdb.New(e.db).Release(ctx, pgxdb.ReleaseParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
		Fence:       p.Fence,
	})
	return n == 1, txDone(err)
}

func (e executor) MarkCommitted(ctx context.Context, p idriver.MarkParams) (bool, error) {
	n, err := pgxdb.New(e.db).MarkCommitted(ctx, pgxdb.MarkCommittedParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	return n == 1, txDone(err)
}

func (e executor) Abandon(ctx context.Context, p idriver.LeaseParams) error {
	_, err := pgxdb.New(e.db).Abandon(ctx, pgxdb.AbandonParams{
		LockTimeout: e.lockTimeout(ctx),
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
	})
	return txDone(err)
}

func (e executor) Extend(ctx context.Context, p idriver.ExtendParams) (int64, bool, error) {
	until, err := pgxdb.New(e.db).Extend(ctx, pgxdb.ExtendParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return until.Int64, err == nil, txDone(err)
}

func (e executor) PurgeBatch(ctx context.Context, p idriver.PurgeBatchParams) (idriver.PurgeBatchResult, error) {
	r, err := pgxdb.New(e.db).PurgeBatch(ctx, pgxdb.PurgeBatchParams{Now: p.Now, After: p.After, BatchSize: int32(min(p.Limit, math.MaxInt32))})
	return idriver.PurgeBatchResult{Deleted: r.Deleted, Last: r.LastExpiresAt}, txDone(err)
}

func (e executor) Stats(ctx context.Context, now int64) (idriver.StatsResult, error) {
	row, err := pgxdb.New(e.db).Stats(ctx, now)
	if err != nil {
		return idriver.StatsResult{}, err
	}
	expired, estimated := row.ExpiresPassed, false
	if expired > statsCountLimit {
		if expired, err = e.expiredEstimate(ctx, now); err != nil {
			return idriver.StatsResult{}, err
		}
		expired, estimated = max(expired, statsCountLimit+1), true
	}
	return idriver.StatsResult{
		InFlight: row.InFlight, Completed: max(0, row.Total-row.InFlight-row.Released), Released: row.Released, CompletedEstimated: row.TotalEstimated,
		Expired: max(0, expired-row.ExpiresPassedLeased), ExpiredEstimated: estimated, LeaseExpired: row.LeaseExpired,
		Committed: row.Committed, Oldest: row.OldestCreatedAt, Newest: row.NewestCreatedAt,
		OldestExpired: row.OldestExpiresAt,
	}, nil
}

// statsCountLimit is how many expired rows the Stats query counts (its
// LIMIT is one more): past it, Expired is the planner's estimate.
const statsCountLimit = 100_000

// expiredEstimate is the planner's estimate of the rows expired by now
// (the Plan Rows of EXPLAIN, from the statistics of the last ANALYZE,
// autovacuum's included): counting millions of expired rows took most of a
// second. now is an integer, written into the statement.
func (e executor) expiredEstimate(ctx context.Context, now int64) (int64, error) {
	q := "EXPLAIN (FORMAT JSON) SELECT 1 FROM idempotency_ledger WHERE expires_at <= " + strconv.FormatInt(now, 10)
	var plan []byte
	if err := e.db.QueryRow(ctx, q).Scan(&plan); err != nil {
		return 0, txDone(err)
	}
	var explained []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &explained); err != nil || len(explained) == 0 {
		return 0, fmt.Errorf("pgxv5: stats: reading the planner's estimate: %w (%s)", err, plan)
	}
	return int64(explained[0].Plan.Rows), nil
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
var errNoTx = errors.New("pgxv5: savepoint outside a transaction")

func (e executor) exec(ctx context.Context, stmt string) error {
	if e.tx == nil {
		return errNoTx
	}
	_, err := e.tx.Exec(ctx, stmt)
	return txDone(err)
}

func (e executor) FindKey(ctx context.Context, key string, limit int) ([]idriver.Row, error) {
	got, err := pgxdb.New(e.db).FindKey(ctx, pgxdb.FindKeyParams{Key: key, MaxRows: int64(limit)})
	if err != nil {
		return nil, txDone(err)
	}
	return rows(got), nil
}

func (e executor) ListInFlight(ctx context.Context, limit int) ([]idriver.Row, error) {
	got, err := pgxdb.New(e.db).ListInFlight(ctx, int64(limit))
	if err != nil {
		return nil, txDone(err)
	}
	return rows(got), nil
}

func rows(got []pgxdb.IdempotencyLedger) []idriver.Row {
	out := make([]idriver.Row, len(got))
	for i, g := range got {
		out[i] = row(g)
	}
	return out
}

// row is the driver's one mapping of a stored row; NULLs read as zero
// values (driver.Row).
func row(g pgxdb.IdempotencyLedger) idriver.Row {
	return idriver.Row{
		Scope: g.Scope, Key: g.Key, Fingerprint: g.Fingerprint, State: g.State,
		LeaseToken: g.LeaseToken.String, LeaseExpiresAt: g.LeaseExpiresAt.Int64, Fence: g.Fence,
		Status: g.Status.Int64, Headers: g.Headers, Body: g.Body,
		CreatedAt: g.CreatedAt, CompletedAt: g.CompletedAt.Int64, ExpiresAt: g.ExpiresAt,
		CommittedAt: g.CommittedAt.Int64, Kind: g.Kind.String, Failures: g.Failures,
	}
}
