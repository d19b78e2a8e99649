package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/sqlitedb"
)

// Driver is the ledger's driver for a SQLite database opened with [Open]
// (or any *[sql.DB] of modernc.org/sqlite with the same settings); its
// transactions are *[sql.Tx]. Build it with [New] and hand it to ledger.New.
// It holds statements prepared on the pool (see the package doc, Prepared
// statements); the *sql.DB stays the caller's to close, after the ledger.
type Driver struct {
	db *sql.DB
	// prepared is nil before Prepare and after Close.
	prepared atomic.Pointer[prepared]
	// pool is the Executor on db, made once so that DB returns the same
	// value every time.
	pool idriver.Executor
	// gate is db's gate, when Open opened it (see Settle).
	gate gateOf
}

var (
	_ idriver.Driver[*sql.Tx] = (*Driver)(nil)
	_ idriver.Preparer        = (*Driver)(nil)
)

// New returns the driver for db. It does not use db until ledger.New
// prepares the statements. A nil db is refused by ledger.New.
func New(db *sql.DB) *Driver {
	d := &Driver{db: db}
	d.pool = idriver.Interpreted(executor{d: d}, interpretError)
	return d
}

// prepared is the set of statements prepared on the pool.
type prepared struct {
	q *sqlitedb.Queries
	// probe ("SELECT 1") tells whether a transaction is the pool's: see
	// owns.
	probe *sql.Stmt
}

// Prepare prepares the ledger's statements on the pool, once, using one of
// its connections: ledger.New calls it, never an operation (a pool of one
// connection inside a transaction would wait for ever). The schema must be
// migrated by then. A nil db is an error.
func (d *Driver) Prepare(ctx context.Context) error {
	return interpretError(d.prepare(ctx))
}

func (d *Driver) prepare(ctx context.Context) error {
	if d == nil || d.db == nil {
		return errors.New("sqlite: nil *sql.DB")
	}
	probe, err := d.db.PrepareContext(ctx, "SELECT 1")
	if err != nil {
		return err
	}
	q, err := sqlitedb.Prepare(ctx, d.db)
	if err != nil {
		// sqlitedb.Prepare does not close what it prepared before the
		// failure; those statements are freed when the pool closes.
		probe.Close()
		return err
	}
	if old := d.prepared.Swap(&prepared{q: q, probe: probe}); old != nil {
		old.close()
	}
	return nil
}

// Close releases the prepared statements; later statements run unprepared.
// It never closes the *[sql.DB]. A second Close returns nil.
func (d *Driver) Close() error {
	if p := d.prepared.Swap(nil); p != nil {
		return p.close()
	}
	return nil
}

func (p *prepared) close() error { return errors.Join(p.q.Close(), p.probe.Close()) }

// owns reports whether tx was begun on the pool, the condition for
// Tx.StmtContext to accept the pool's statements. A *sql.Tx does not say
// which pool it came from, so ask it: Tx.StmtContext answers a statement
// of another pool (or a finished transaction, or a cancelled ctx) with a
// Stmt whose every method returns that error, Close included, and runs
// nothing. An accepted statement closes with nil, having run nothing either;
// on the first use of a connection it prepares "SELECT 1" there, once.
// Whatever made it refuse, the unprepared path then does the right thing:
// it runs, or fails with the same cause.
func (p *prepared) owns(ctx context.Context, tx *sql.Tx) bool {
	return tx.StmtContext(ctx, p.probe).Close() == nil
}

// DB returns the Executor on the pool.
func (d *Driver) DB() idriver.Executor { return d.pool }

// TxExecutor returns the Executor inside tx.
func (d *Driver) TxExecutor(tx *sql.Tx) idriver.Executor {
	return idriver.Interpreted(executor{d: d, tx: tx}, interpretError)
}

// Begin begins a transaction on the pool (BEGIN IMMEDIATE with [Open]'s
// settings).
func (d *Driver) Begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	return tx, interpretError(err)
}

// Commit commits tx.
func (d *Driver) Commit(_ context.Context, tx *sql.Tx) error { return interpretError(tx.Commit()) }

// Rollback rolls tx back; nil when tx is already over.
func (d *Driver) Rollback(_ context.Context, tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// BeginLocks reports true: [Open]'s transactions are immediate, and take
// the database's write lock at BEGIN.
func (d *Driver) BeginLocks() bool { return true }

// NilDB reports whether the driver has no *[sql.DB].
func (d *Driver) NilDB() bool { return d == nil || d.db == nil }

// IsNilTx reports whether tx is nil.
func (d *Driver) IsNilTx(tx *sql.Tx) bool { return tx == nil }

// SQL returns the *[sql.DB] the driver was built on.
func (d *Driver) SQL() *sql.DB { return d.db }

// executor runs the queries of queries/sqlite on the pool (tx nil) or in
// tx. Its clock is the process's: SQLite serves one machine, whose
// processes share that clock.
type executor struct {
	d  *Driver
	tx *sql.Tx
}

// queries returns the sqlc queries to run: the prepared ones when they
// exist and (for a transaction) tx was begun on the pool, else unprepared
// ones, which parse their SQL at every call. With SQLite in pure Go,
// parsing the long claim statement was most of Mutate's CPU time.
func (e executor) queries(ctx context.Context) *sqlitedb.Queries {
	p := e.d.prepared.Load()
	if e.tx == nil {
		if p != nil {
			return p.q
		}
		return sqlitedb.New(e.d.db)
	}
	if p != nil && p.owns(ctx, e.tx) {
		return p.q.WithTx(e.tx)
	}
	return sqlitedb.New(e.tx)
}

// late reports whether a claim's write at now comes after its
// ClaimParams.ValidUntil. SQLite runs in the caller's process: the write
// follows the check at once, or waits for the write lock under the claim's
// context, which ends by then.
func late(a idriver.ClaimParams, now int64) bool { return a.ValidUntil != 0 && now > a.ValidUntil }

func clock(now int64) int64 {
	if now != 0 {
		return now
	}
	return time.Now().UnixMilli()
}

func (e executor) Now(context.Context) (int64, error) { return time.Now().UnixMilli(), nil }

// Claim, on the pool, reads the key's row first, with a plain SELECT that
// takes no write lock (it runs outside any transaction, beside other
// readers and beside the one writer, thanks to WAL), and answers from it
// when the row stands: a replay, a live lease, a reused key. That is safe
// because a standing row only changes by its own lease holder (Complete,
// Release, Extend, Abandon) or once it has expired, and now is read after
// the SELECT: a row unexpired at now was unexpired at the read, so the
// answer held at that instant. Only a key without a row, or a row that may
// be taken over, leads to a write.
//
// Inside a transaction (ledger.Mutate) the caller's BEGIN IMMEDIATE
// already holds the write lock and nothing commits before the caller
// does, so reading first would save nothing but cost a first execution
// (the usual case there: idemhttp's TxHandler answers replays with a read
// before BEGIN) one more statement. There Claim inserts first, as an
// INSERT … ON CONFLICT DO NOTHING that finds the key changes no page, and
// reads the row only when the insert found one.
//
// Each write decides atomically on its own (ClaimInsert only when the key
// has no row, ClaimTakeover only when the row may be taken over) and tells
// its caller whether it won in the same statement, so no write is ever
// committed unbeknown to the claim. If the row changes between the read
// and the write, the write matches nothing and the ledger starts over.
// (sqlc 1.31 leaves a named parameter unrewritten inside ON CONFLICT … DO
// UPDATE … WHERE, which is one reason SQLite does not use PostgreSQL's
// single upsert: see queries/sqlite/ledger.sql.)
func (e executor) Claim(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	q := e.queries(ctx)
	if e.tx != nil {
		now := clock(a.Now)
		won, err := claimInsert(ctx, q, a, now)
		if won.Won || err != nil {
			return won, err
		}
	}
	got, err := q.Get(ctx, sqlitedb.GetParams{Scope: a.Scope, Key: a.Key})
	if errors.Is(err, sql.ErrNoRows) {
		if e.tx != nil {
			// The insert found a row that is gone (not possible while
			// tx holds the write lock): the ledger starts over.
			return idriver.ClaimResult{}, nil
		}
		// No row at the read: insert. Should another claim insert one
		// first, this inserts nothing and the ledger reads that row.
		now := clock(a.Now)
		if late(a, now) {
			return idriver.ClaimResult{Late: true, Now: now}, nil
		}
		return claimInsert(ctx, q, a, now)
	}
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	// now after the read, never before: see above.
	now := clock(a.Now)
	if r := row(got); !idriver.MayTakeOver(r, a, now) {
		return idriver.ClaimResult{Row: r, Now: now}, nil
	}
	if late(a, now) {
		return idriver.ClaimResult{Late: true, Now: now}, nil
	}
	won, err := q.ClaimTakeover(ctx, sqlitedb.ClaimTakeoverParams{
		Fingerprint:    a.Fingerprint,
		LeaseToken:     sql.NullString{String: a.Token, Valid: true},
		LeaseExpiresAt: sql.NullInt64{Int64: now + a.LeaseMillis, Valid: true},
		Now:            now,
		ExpiresAt:      now + a.TTLMillis,
		Scope:          a.Scope,
		Key:            a.Key,
		Recover:        boolInt(a.Recover),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return idriver.ClaimResult{}, nil // changed since the read: the ledger starts over
	}
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	return idriver.ClaimResult{Won: true, Fence: won.Fence, LeaseExpiresAt: now + a.LeaseMillis, CommittedAt: won.CommittedAt.Int64, Failures: won.Failures}, nil
}

// claimInsert inserts a new in-flight row for a key that has none; Won is
// false, with no Row, when the key has one.
func claimInsert(ctx context.Context, q *sqlitedb.Queries, a idriver.ClaimParams, now int64) (idriver.ClaimResult, error) {
	n, err := q.ClaimInsert(ctx, sqlitedb.ClaimInsertParams{
		Scope:          a.Scope,
		Key:            a.Key,
		Fingerprint:    a.Fingerprint,
		LeaseToken:     sql.NullString{String: a.Token, Valid: true},
		LeaseExpiresAt: sql.NullInt64{Int64: now + a.LeaseMillis, Valid: true},
		Now:            now,
		ExpiresAt:      now + a.TTLMillis,
	})
	if err != nil || n != 1 {
		return idriver.ClaimResult{}, err
	}
	return idriver.ClaimResult{Won: true, Fence: 1, LeaseExpiresAt: now + a.LeaseMillis}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func row(g sqlitedb.IdempotencyLedger) *idriver.Row {
	return &idriver.Row{
		Scope: g.Scope, Key: g.Key, Fingerprint: g.Fingerprint, State: g.State,
		LeaseToken: g.LeaseToken.String, LeaseExpiresAt: g.LeaseExpiresAt.Int64, Fence: g.Fence,
		Status: g.Status.Int64, Headers: g.Headers, Body: g.Body,
		CreatedAt: g.CreatedAt, CompletedAt: g.CompletedAt.Int64, ExpiresAt: g.ExpiresAt,
		CommittedAt: g.CommittedAt.Int64, Kind: g.Kind.String, Failures: g.Failures,
	}
}

// Get reads the row, then the clock: a row unexpired at now was unexpired
// at the read (see Claim).
func (e executor) Get(ctx context.Context, p idriver.GetParams) (idriver.GetResult, error) {
	got, err := e.queries(ctx).Get(ctx, sqlitedb.GetParams{Scope: p.Scope, Key: p.Key})
	now := clock(p.Now)
	if errors.Is(err, sql.ErrNoRows) {
		return idriver.GetResult{Now: now}, nil
	}
	if err != nil {
		return idriver.GetResult{}, err
	}
	return idriver.GetResult{Row: row(got), Now: now}, nil
}

func (e executor) Complete(ctx context.Context, p idriver.CompleteParams) (idriver.CompleteResult, error) {
	if n := rowSize(p); n > maxLength {
		return idriver.CompleteResult{}, &idriver.TooLargeError{Size: n, Limit: maxLength}
	}
	now := clock(p.Now)
	mark, err := e.queries(ctx).Complete(ctx, sqlitedb.CompleteParams{
		Status:     sql.NullInt64{Int64: p.Status, Valid: true},
		Headers:    p.Headers,
		Body:       p.Body,
		Kind:       sql.NullString{String: p.Kind, Valid: p.Kind != ""},
		Now:        sql.NullInt64{Int64: now, Valid: true},
		ExpiresAt:  now + p.TTLMillis,
		Scope:      p.Scope,
		Key:        p.Key,
		LeaseToken: sql.NullString{String: p.Token, Valid: true},
		Fence:      p.Fence,
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return idriver.CompleteResult{}, nil // the lease did not hold
	case isTooBig(err):
		return idriver.CompleteResult{}, &idriver.TooLargeError{Size: rowSize(p), Limit: e.lengthLimit(ctx), Err: err}
	case err != nil:
		return idriver.CompleteResult{}, err
	}
	return idriver.CompleteResult{OK: true, CompletedAt: now, CommittedAt: mark.Int64, Marked: true}, nil
}

func (e executor) Release(ctx context.Context, p idriver.ReleaseParams) (bool, error) {
	n, err := e.queries(ctx).Release(ctx, sqlitedb.ReleaseParams{
		LeaseMillis: sql.NullInt64{Int64: p.LeaseMillis, Valid: true},
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
	})
	return n == 1, err
}

func (e executor) MarkCommitted(ctx context.Context, p idriver.MarkParams) (bool, error) {
	n, err := e.queries(ctx).MarkCommitted(ctx, sqlitedb.MarkCommittedParams{
		Now:         sql.NullInt64{Int64: clock(p.Now), Valid: true},
		WrittenAt:   sql.NullInt64{Int64: p.Now, Valid: p.Now != 0},
		LeaseMillis: p.LeaseMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
	})
	return n == 1, err
}

func (e executor) Abandon(ctx context.Context, p idriver.LeaseParams) error {
	_, err := e.queries(ctx).Abandon(ctx, sqlitedb.AbandonParams{
		Scope:      p.Scope,
		Key:        p.Key,
		LeaseToken: sql.NullString{String: p.Token, Valid: true},
	})
	return err
}

func (e executor) Extend(ctx context.Context, p idriver.ExtendParams) (int64, bool, error) {
	until := clock(p.Now) + p.LeaseMillis
	n, err := e.queries(ctx).Extend(ctx, sqlitedb.ExtendParams{
		LeaseExpiresAt: sql.NullInt64{Int64: until, Valid: true},
		Scope:          p.Scope,
		Key:            p.Key,
		LeaseToken:     sql.NullString{String: p.Token, Valid: true},
		Fence:          p.Fence,
	})
	return until, n == 1 && err == nil, err
}

// PurgeBatch always starts from the head of the expiry index (Last 0):
// SQLite removes a deleted row's index entries with it, so there are no
// dead entries for a batch to step over.
func (e executor) PurgeBatch(ctx context.Context, p idriver.PurgeBatchParams) (idriver.PurgeBatchResult, error) {
	n, err := e.queries(ctx).PurgeBatch(ctx, sqlitedb.PurgeBatchParams{Now: p.Now, BatchSize: int64(p.Limit)})
	return idriver.PurgeBatchResult{Deleted: n}, err
}

// statsCountLimit is how many expired rows the Stats query counts one by
// one (its LIMIT is one more): past it, Expired is an estimate.
const statsCountLimit = 100_000

func (e executor) Stats(ctx context.Context, now int64) (idriver.StatsResult, error) {
	row, err := e.queries(ctx).Stats(ctx, sql.NullInt64{Int64: now, Valid: true})
	if err != nil {
		return idriver.StatsResult{}, err
	}
	expired, estimated := row.ExpiresPassed, false
	if expired > statsCountLimit {
		// Counted up to the limit only: estimated from the rowids (see
		// the query), at least the limit and at most every record.
		expired = min(row.Total, max(statsCountLimit+1, row.LastExpiredRowid-row.FirstRowid+1))
		estimated = true
	}
	return idriver.StatsResult{
		InFlight: row.InFlight, Completed: max(0, row.Total-row.InFlight-row.Released), Released: row.Released, CompletedEstimated: false,
		Expired: max(0, expired-row.ExpiresPassedLeased), ExpiredEstimated: estimated, LeaseExpired: row.LeaseExpired,
		Committed: row.Committed, Oldest: row.OldestCreatedAt, Newest: row.NewestCreatedAt,
		OldestExpired: row.OldestExpiresAt,
	}, nil
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
var errNoTx = errors.New("sqlite: savepoint outside a transaction")

func (e executor) exec(ctx context.Context, stmt string) error {
	if e.tx == nil {
		return errNoTx
	}
	_, err := e.tx.ExecContext(ctx, stmt)
	return err
}

func (e executor) FindKey(ctx context.Context, key string, limit int) ([]idriver.Row, error) {
	got, err := e.queries(ctx).FindKey(ctx, sqlitedb.FindKeyParams{Key: key, MaxRows: int64(limit)})
	return rows(got), err
}

func (e executor) ListInFlight(ctx context.Context, limit int) ([]idriver.Row, error) {
	got, err := e.queries(ctx).ListInFlight(ctx, int64(limit))
	return rows(got), err
}

func rows(got []sqlitedb.IdempotencyLedger) []idriver.Row {
	out := make([]idriver.Row, len(got))
	for i, g := range got {
		out[i] = *row(g)
	}
	return out
}
