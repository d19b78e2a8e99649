package postgres

import (
	// pgx's database/sql driver, registered as "pgx": importing this
	// package is enough to sql.Open("pgx", url).
	_ "github.com/jackc/pgx/v5/stdlib"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgdb"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/internal/pgmigrate"
	"github.com/idemledger/idemledger/schema"
)

// Driver is the ledger's driver for a PostgreSQL database reached through
// database/sql with pgx's driver (github.com/jackc/pgx/v5/stdlib); its
// transactions are *[sql.Tx]. Build it with [New] and hand it to ledger.New.
// It holds nothing but the *[sql.DB], which stays the caller's to close.
type Driver struct {
	db *sql.DB
	// pool is the Executor on db, made once.
	pool idriver.Executor
}

var _ idriver.Driver[*sql.Tx] = (*Driver)(nil)

// New returns the driver for db, a pool opened with the "pgx" driver of
// github.com/jackc/pgx/v5/stdlib (sql.Open("pgx", url)) or
// stdlib.OpenDB/OpenDBFromPool. It does not use db until an operation
// does. A nil db is refused by ledger.New.
func New(db *sql.DB) *Driver {
	return &Driver{db: db, pool: idriver.Interpreted(executor{db: db}, pgerr.Interpret)}
}

// DB returns the Executor on the pool.
func (d *Driver) DB() idriver.Executor { return d.pool }

// TxExecutor returns the Executor inside tx.
func (d *Driver) TxExecutor(tx *sql.Tx) idriver.Executor {
	return idriver.Interpreted(executor{db: tx, tx: tx}, pgerr.Interpret)
}

// Begin begins a transaction on the pool, at the server's default
// isolation level.
func (d *Driver) Begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	return tx, pgerr.Interpret(err)
}

// Commit commits tx.
func (d *Driver) Commit(_ context.Context, tx *sql.Tx) error { return pgerr.Interpret(tx.Commit()) }

// Rollback rolls tx back; nil when tx is already over.
func (d *Driver) Rollback(_ context.Context, tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// BeginLocks reports false: a PostgreSQL transaction locks rows as it
// writes them.
func (d *Driver) BeginLocks() bool { return false }

// NilDB reports whether the driver has no *[sql.DB].
func (d *Driver) NilDB() bool { return d == nil || d.db == nil }

// IsNilTx reports whether tx is nil.
func (d *Driver) IsNilTx(tx *sql.Tx) bool { return tx == nil }

// Migration returns golang-migrate's pgx/v5 driver over the pool, for
// package schema.
func (d *Driver) Migration() schema.Migration {
	return pgmigrate.Migration(func() *sql.DB { return d.db })
}

// SQL returns the *[sql.DB] the driver was built on.
func (d *Driver) SQL() *sql.DB { return d.db }

// executor runs the queries of queries/postgres through sqlc's database/sql
// package. pgx's database/sql driver caches prepared statements per
// connection itself, so nothing is prepared here.
type executor struct {
	db pgdb.DBTX
	tx *sql.Tx // nil on the pool
}

// at is the @now parameter of the queries: NULL for the server's clock.
func at(now int64) sql.NullInt64 { return sql.NullInt64{Int64: now, Valid: now != 0} }

// lockTimeout is the @lock_timeout parameter of a statement under ctx: on
// the pool, derived from ctx's deadline (see pgerr.LockTimeout); NULL
// inside a caller's transaction, whose settings are the caller's.
func (e executor) lockTimeout(ctx context.Context) sql.NullString {
	if e.tx != nil {
		return sql.NullString{}
	}
	ms, ok := pgerr.LockTimeout(ctx)
	return sql.NullString{String: ms, Valid: ok}
}

func (e executor) Now(ctx context.Context) (int64, error) { return pgdb.New(e.db).Now(ctx) }

// Claim runs the one statement of queries/postgres (Claim): it reads the
// row and writes only when the row does not stand (through the function of
// migration 5, which the statement's plan skips otherwise), so a replay, an
// in-flight answer or a reused key costs one round trip and the server's
// cost of a plain read (see the query's comment for why that is safe). It returns the row it read, with the
// server's clock at the read, for the ledger to explain a lost claim.
func (e executor) Claim(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	r, err := pgdb.New(e.db).Claim(ctx, pgdb.ClaimParams{
		LockTimeout: e.lockTimeout(ctx),
		Scope:       a.Scope,
		Key:         a.Key,
		Fingerprint: a.Fingerprint,
		LeaseToken:  a.Token,
		LeaseMillis: a.LeaseMillis,
		TtlMillis:   a.TTLMillis,
		Now:         at(a.Now),
		Recover:     a.Recover,
		ValidUntil:  sql.NullInt64{Int64: a.ValidUntil, Valid: a.ValidUntil != 0},
	})
	if err != nil {
		return idriver.ClaimResult{}, err
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
	g, err := pgdb.New(e.db).Get(ctx, pgdb.GetParams{Now: at(p.Now), Scope: p.Scope, Key: p.Key})
	if errors.Is(err, sql.ErrNoRows) {
		// The miss happened at the server's now, which only the row
		// carries; a miss makes a claim start over, where now is unused.
		return idriver.GetResult{}, nil
	}
	if err != nil {
		return idriver.GetResult{}, err
	}
	r := row(g.IdempotencyLedger)
	return idriver.GetResult{Now: g.Now, Row: &r}, nil
}

func (e executor) Complete(ctx context.Context, p idriver.CompleteParams) (idriver.CompleteResult, error) {
	if err := pgerr.CheckOutcome(p); err != nil {
		return idriver.CompleteResult{}, err
	}
	got, err := pgdb.New(e.db).Complete(ctx, pgdb.CompleteParams{
		LockTimeout: e.lockTimeout(ctx),
		Status:      sql.NullInt64{Int64: p.Status, Valid: true},
		Headers:     p.Headers,
		Body:        p.Body,
		Kind:        sql.NullString{String: p.Kind, Valid: p.Kind != ""},
		TtlMillis:   p.TTLMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return idriver.CompleteResult{}, nil // the lease did not hold
	}
	if err != nil {
		return idriver.CompleteResult{}, pgerr.TooLarge(p, err)
	}
	return idriver.CompleteResult{OK: true, CompletedAt: got.CompletedAt.Int64, CommittedAt: got.CommittedAt.Int64, Marked: true}, nil
}

func (e executor) Release(ctx context.Context, p idriver.ReleaseParams) (bool, error) {
	n, err := pgdb.New(e.db).Release(ctx, pgdb.ReleaseParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
	})
	return n == 1, err
}

func (e executor) MarkCommitted(ctx context.Context, p idriver.MarkParams) (bool, error) {
	n, err := pgdb.New(e.db).MarkCommitted(ctx, pgdb.MarkCommittedParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	return n == 1, err
}

func (e executor) Abandon(ctx context.Context, p idriver.LeaseParams) error {
	_, err := pgdb.New(e.db).Abandon(ctx, pgdb.AbandonParams{
		LockTimeout: e.lockTimeout(ctx),
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
	})
	return err
}

func (e executor) Extend(ctx context.Context, p idriver.ExtendParams) (int64, bool, error) {
	until, err := pgdb.New(e.db).Extend(ctx, pgdb.ExtendParams{
		LockTimeout: e.lockTimeout(ctx),
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return until.Int64, err == nil, err
}

func (e executor) PurgeBatch(ctx context.Context, p idriver.PurgeBatchParams) (idriver.PurgeBatchResult, error) {
	r, err := pgdb.New(e.db).PurgeBatch(ctx, pgdb.PurgeBatchParams{Now: p.Now, After: p.After, BatchSize: int32(min(p.Limit, math.MaxInt32))})
	return idriver.PurgeBatchResult{Deleted: r.Deleted, Last: r.LastExpiresAt}, err
}

func (e executor) Stats(ctx context.Context, now int64) (idriver.StatsResult, error) {
	row, err := pgdb.New(e.db).Stats(ctx, now)
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
	if err := e.db.QueryRowContext(ctx, q).Scan(&plan); err != nil {
		return 0, err
	}
	var explained []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &explained); err != nil || len(explained) == 0 {
		return 0, fmt.Errorf("postgres: stats: reading the planner's estimate: %w (%s)", err, plan)
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
var errNoTx = errors.New("postgres: savepoint outside a transaction")

func (e executor) exec(ctx context.Context, stmt string) error {
	if e.tx == nil {
		return errNoTx
	}
	_, err := e.tx.ExecContext(ctx, stmt)
	return err
}

func (e executor) FindKey(ctx context.Context, key string, limit int) ([]idriver.Row, error) {
	got, err := pgdb.New(e.db).FindKey(ctx, pgdb.FindKeyParams{Key: key, MaxRows: int64(limit)})
	if err != nil {
		return nil, err
	}
	return rows(got), nil
}

func (e executor) ListInFlight(ctx context.Context, limit int) ([]idriver.Row, error) {
	got, err := pgdb.New(e.db).ListInFlight(ctx, int64(limit))
	if err != nil {
		return nil, err
	}
	return rows(got), nil
}

func rows(got []pgdb.IdempotencyLedger) []idriver.Row {
	out := make([]idriver.Row, len(got))
	for i, g := range got {
		out[i] = row(g)
	}
	return out
}

// row is the driver's one mapping of a stored row; NULLs read as zero
// values (driver.Row).
func row(g pgdb.IdempotencyLedger) idriver.Row {
	return idriver.Row{
		Scope: g.Scope, Key: g.Key, Fingerprint: g.Fingerprint, State: g.State,
		LeaseToken: g.LeaseToken.String, LeaseExpiresAt: g.LeaseExpiresAt.Int64, Fence: g.Fence,
		Status: g.Status.Int64, Headers: g.Headers, Body: g.Body,
		CreatedAt: g.CreatedAt, CompletedAt: g.CompletedAt.Int64, ExpiresAt: g.ExpiresAt,
		CommittedAt: g.CommittedAt.Int64, Kind: g.Kind.String, Failures: g.Failures,
	}
}
