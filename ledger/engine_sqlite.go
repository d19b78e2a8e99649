package ledger

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/ledger/internal/sqlitedb"
)

// sqliteEngine runs the queries of queries/sqlite through the
// sqlc-generated package. Its clock is the process's (Config.Now): SQLite
// serves one machine, whose processes share that clock.
//
// Without a pool, every call prepares its statement anew: database/sql
// reuses a prepared statement only when it was prepared on the *sql.DB the
// call runs on, and the ledger does not know that pool. With SQLite in pure
// Go, parsing the long Claim statement was most of Mutate's CPU time. With
// a pool (Config.DB), the statements are prepared once on it, and
// database/sql keeps one prepared copy per connection of the pool: calls
// on the pool and on its transactions reuse them (see queries).
type sqliteEngine struct {
	clock func() time.Time
	pool  *sql.DB
	// prepared is nil without a pool and after close.
	prepared atomic.Pointer[sqlitePrepared]
}

// sqlitePrepared is the set of statements prepared on the pool.
type sqlitePrepared struct {
	q *sqlitedb.Queries
	// probe ("SELECT 1") tells whether a transaction is the pool's: see
	// owns.
	probe *sql.Stmt
}

var _ engine = (*sqliteEngine)(nil)

// newSQLiteEngine prepares the statements on pool, when there is one. It
// uses a connection of the pool, so it must not run while the caller holds
// all of them (a pool of one connection inside a transaction would wait
// for ever); that is why it runs in New and never lazily inside an
// operation.
func newSQLiteEngine(ctx context.Context, clock func() time.Time, pool *sql.DB) (*sqliteEngine, error) {
	e := &sqliteEngine{clock: clock, pool: pool}
	if pool == nil {
		return e, nil
	}
	probe, err := pool.PrepareContext(ctx, "SELECT 1")
	if err != nil {
		return nil, err
	}
	q, err := sqlitedb.Prepare(ctx, pool)
	if err != nil {
		// sqlitedb.Prepare does not close what it prepared before the
		// failure; those statements are freed when the pool closes.
		probe.Close()
		return nil, err
	}
	e.prepared.Store(&sqlitePrepared{q: q, probe: probe})
	return e, nil
}

// queries returns the sqlc queries to run on db: the prepared ones when db
// is the pool or one of its transactions, else unprepared ones. A
// *sql.Conn always runs unprepared: database/sql has no way to use a
// pool's statement on a Conn.
func (e *sqliteEngine) queries(ctx context.Context, db DBTX) *sqlitedb.Queries {
	if p := e.prepared.Load(); p != nil {
		switch d := db.(type) {
		case *sql.DB:
			if d == e.pool {
				return p.q
			}
		case *sql.Tx:
			if p.owns(ctx, d) {
				return p.q.WithTx(d)
			}
		}
	}
	return sqlitedb.New(db)
}

// owns reports whether tx was begun on the pool, the condition for
// Tx.StmtContext to accept the pool's statements. A *sql.Tx does not say
// which pool it came from, so ask it: Tx.StmtContext answers a statement
// of another pool (or a finished transaction, or a cancelled ctx) with a
// Stmt whose every method returns that error, Close included, and runs
// nothing. An accepted statement closes with nil, having run nothing either;
// on the first use of a connection it prepares "SELECT 1" there, once.
// Whatever made it refuse, the unprepared path then does the right thing:
// it runs, or fails with the same cause.
func (p *sqlitePrepared) owns(ctx context.Context, tx *sql.Tx) bool {
	return tx.StmtContext(ctx, p.probe).Close() == nil
}

// close releases the prepared statements; later calls run unprepared.
func (e *sqliteEngine) close() error {
	p := e.prepared.Swap(nil)
	if p == nil {
		return nil
	}
	return errors.Join(p.q.Close(), p.probe.Close())
}

func (e *sqliteEngine) now(context.Context, DBTX) (int64, error) { return e.clock().UnixMilli(), nil }

// claim inserts the row; most claims are of new keys and end there. When
// the key has a row it reads it, and tries to take it over only if the row
// does not stand (a replay, a reused key and a live lease, the usual
// answers to a retry, end with the read). Each write decides atomically on
// its own (the insert only when the key has no row, the update only when
// the row may be taken over) and tells its caller whether it won in the
// same statement, so no write is ever committed unbeknown to the claim.
// The read and the update are apart on a pool; if the row changed in
// between, the update matches nothing and Claim starts over.
func (e *sqliteEngine) claim(ctx context.Context, db DBTX, a claimArgs) (claimed, error) {
	now := e.clock().UnixMilli()
	q := e.queries(ctx, db)
	token := sql.NullString{String: a.token, Valid: true}
	leaseExpiresAt := sql.NullInt64{Int64: now + a.lease, Valid: true}
	n, err := q.ClaimInsert(ctx, sqlitedb.ClaimInsertParams{
		Scope:          a.req.Scope,
		Key:            a.req.Key,
		Fingerprint:    a.req.Fingerprint[:],
		LeaseToken:     token,
		LeaseExpiresAt: leaseExpiresAt,
		Now:            now,
		ExpiresAt:      now + a.ttl,
	})
	if err != nil {
		return claimed{}, classifySQLite(err)
	}
	if n == 1 {
		return claimed{won: true, fence: 1, leaseExpiresAt: now + a.lease}, nil
	}
	row, err := q.Get(ctx, sqlitedb.GetParams{Scope: a.req.Scope, Key: a.req.Key})
	if errors.Is(err, sql.ErrNoRows) {
		return claimed{}, nil // gone since the insert: Claim starts over
	}
	if err != nil {
		return claimed{}, classifySQLite(err)
	}
	r, err := storedRow(row).record()
	if err != nil {
		return claimed{}, err
	}
	if c, err := standing(a.req, r, now); c != nil || err != nil {
		return claimed{record: r, now: now}, nil
	}
	fence, err := q.ClaimTakeover(ctx, sqlitedb.ClaimTakeoverParams{
		Fingerprint:    a.req.Fingerprint[:],
		LeaseToken:     token,
		LeaseExpiresAt: leaseExpiresAt,
		Now:            now,
		ExpiresAt:      now + a.ttl,
		Scope:          a.req.Scope,
		Key:            a.req.Key,
	})
	if errors.Is(err, sql.ErrNoRows) {
		return claimed{}, nil
	}
	if err != nil {
		return claimed{}, classifySQLite(err)
	}
	return claimed{won: true, fence: fence, leaseExpiresAt: now + a.lease}, nil
}

func (e *sqliteEngine) get(ctx context.Context, db DBTX, scope, key string) (*Record, int64, error) {
	now := e.clock().UnixMilli()
	row, err := e.queries(ctx, db).Get(ctx, sqlitedb.GetParams{Scope: scope, Key: key})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, now, ErrNotFound
	}
	if err != nil {
		return nil, now, classifySQLite(err)
	}
	r, err := storedRow(row).record()
	return r, now, err
}

func (e *sqliteEngine) complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, ttl int64) (bool, error) {
	headers, err := headerJSON(out)
	if err != nil {
		return false, err
	}
	now := e.clock().UnixMilli()
	n, err := e.queries(ctx, db).Complete(ctx, sqlitedb.CompleteParams{
		Status:     sql.NullInt64{Int64: int64(out.Status), Valid: true},
		Headers:    headers,
		Body:       out.Body,
		Now:        sql.NullInt64{Int64: now, Valid: true},
		ExpiresAt:  now + ttl,
		Scope:      l.scope,
		Key:        l.key,
		LeaseToken: sql.NullString{String: l.token, Valid: true},
		Fence:      l.fence,
	})
	return n == 1, classifySQLite(err)
}

func (e *sqliteEngine) release(ctx context.Context, db DBTX, l leaseRef) (bool, error) {
	n, err := e.queries(ctx, db).Release(ctx, sqlitedb.ReleaseParams{
		Scope:      l.scope,
		Key:        l.key,
		LeaseToken: sql.NullString{String: l.token, Valid: true},
		Fence:      l.fence,
	})
	return n == 1, classifySQLite(err)
}

func (e *sqliteEngine) abandon(ctx context.Context, db DBTX, scope, key, token string) error {
	_, err := e.queries(ctx, db).Abandon(ctx, sqlitedb.AbandonParams{
		Scope:      scope,
		Key:        key,
		LeaseToken: sql.NullString{String: token, Valid: true},
	})
	return classifySQLite(err)
}

func (e *sqliteEngine) extend(ctx context.Context, db DBTX, l leaseRef, lease int64) (int64, bool, error) {
	until := e.clock().UnixMilli() + lease
	n, err := e.queries(ctx, db).Extend(ctx, sqlitedb.ExtendParams{
		LeaseExpiresAt: sql.NullInt64{Int64: until, Valid: true},
		Scope:          l.scope,
		Key:            l.key,
		LeaseToken:     sql.NullString{String: l.token, Valid: true},
		Fence:          l.fence,
	})
	return until, n == 1, classifySQLite(err)
}

func (e *sqliteEngine) purgeBatch(ctx context.Context, db DBTX, now int64, limit int) (int64, error) {
	n, err := e.queries(ctx, db).PurgeBatch(ctx, sqlitedb.PurgeBatchParams{Now: now, BatchSize: int64(limit)})
	return n, classifySQLite(err)
}

func (e *sqliteEngine) stats(ctx context.Context, db DBTX, now int64) (statsRow, error) {
	row, err := e.queries(ctx, db).Stats(ctx, now)
	if err != nil {
		return statsRow{}, classifySQLite(err)
	}
	return statsRow{
		inFlight:  row.InFlight,
		completed: row.Completed,
		expired:   row.Expired,
		oldest:    row.OldestCreatedAt,
		newest:    row.NewestCreatedAt,
	}, nil
}

// SQLite's primary result codes for a lock it could not get
// (https://sqlite.org/rescode.html): SQLITE_BUSY when another connection
// held the database past busy_timeout, or the snapshot of a read
// transaction went stale (SQLITE_BUSY_SNAPSHOT); SQLITE_LOCKED for a
// conflict inside one shared-cache connection.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// classifySQLite marks lock failures with ErrRetryable and ErrBusy: a new attempt of
// the caller's transaction may well get the lock. The driver's error
// (modernc.org/sqlite's *sqlite.Error, read through its Code method so
// that the ledger does not import the driver) stays reachable.
func classifySQLite(err error) error {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		if c := coded.Code() & 0xff; c == sqliteBusy || c == sqliteLocked {
			return &retryableError{err: err, busy: true}
		}
	}
	return err
}
