package ledger

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemledger/idemledger/ledger/internal/pgdb"
)

// postgresEngine runs the queries of queries/postgres through the
// sqlc-generated package. With a nil clock every statement reads the
// server's clock (statement_timestamp()), so that replicas whose own clocks
// disagree still agree on leases and expiry; a non-nil clock (Config.Now)
// replaces it, which tests use to move time by hand.
type postgresEngine struct {
	clock func() time.Time
}

var _ engine = postgresEngine{}

// at is the @now parameter of the queries: NULL for the server's clock.
func (e postgresEngine) at() sql.NullInt64 {
	if e.clock == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: e.clock().UnixMilli(), Valid: true}
}

func (e postgresEngine) now(ctx context.Context, db DBTX) (int64, error) {
	if e.clock != nil {
		return e.clock().UnixMilli(), nil
	}
	now, err := pgdb.New(db).Now(ctx)
	return now, classify(err)
}

func (e postgresEngine) claim(ctx context.Context, db DBTX, a claimArgs) (claimed, error) {
	row, err := pgdb.New(db).Claim(ctx, pgdb.ClaimParams{
		Scope:       a.req.Scope,
		Key:         a.req.Key,
		Fingerprint: a.req.Fingerprint[:],
		LeaseToken:  a.token,
		LeaseMillis: a.lease,
		TtlMillis:   a.ttl,
		Now:         e.at(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return claimed{}, nil
	}
	if err != nil {
		return claimed{}, classify(err)
	}
	return claimed{won: true, fence: row.Fence, leaseExpiresAt: row.LeaseExpiresAt.Int64}, nil
}

func (e postgresEngine) get(ctx context.Context, db DBTX, scope, key string) (*Record, int64, error) {
	row, err := pgdb.New(db).Get(ctx, pgdb.GetParams{Now: e.at(), Scope: scope, Key: key})
	if errors.Is(err, sql.ErrNoRows) {
		// The miss happened at the server's now, which only the row
		// carries; a miss makes Claim start over, where now is unused.
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, classify(err)
	}
	r, err := storedRow{
		Scope: row.Scope, Key: row.Key, Fingerprint: row.Fingerprint, State: row.State,
		LeaseToken: row.LeaseToken, LeaseExpiresAt: row.LeaseExpiresAt, Fence: row.Fence,
		Status: row.Status, Headers: row.Headers, Body: row.Body,
		CreatedAt: row.CreatedAt, CompletedAt: row.CompletedAt, ExpiresAt: row.ExpiresAt,
	}.record()
	return r, row.Now, err
}

func (e postgresEngine) complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, ttl int64) (bool, error) {
	headers, err := headerJSON(out)
	if err != nil {
		return false, err
	}
	n, err := pgdb.New(db).Complete(ctx, pgdb.CompleteParams{
		Status:     sql.NullInt64{Int64: int64(out.Status), Valid: true},
		Headers:    headers,
		Body:       out.Body,
		TtlMillis:  ttl,
		Scope:      l.scope,
		Key:        l.key,
		LeaseToken: sql.NullString{String: l.token, Valid: true},
		Fence:      l.fence,
		Now:        e.at(),
	})
	return n == 1, classify(err)
}

func (postgresEngine) release(ctx context.Context, db DBTX, l leaseRef) (bool, error) {
	n, err := pgdb.New(db).Release(ctx, pgdb.ReleaseParams{
		Scope:      l.scope,
		Key:        l.key,
		LeaseToken: sql.NullString{String: l.token, Valid: true},
		Fence:      l.fence,
	})
	return n == 1, classify(err)
}

func (postgresEngine) abandon(ctx context.Context, db DBTX, scope, key, token string) error {
	_, err := pgdb.New(db).Abandon(ctx, pgdb.AbandonParams{
		Scope:      scope,
		Key:        key,
		LeaseToken: sql.NullString{String: token, Valid: true},
	})
	return classify(err)
}

func (e postgresEngine) extend(ctx context.Context, db DBTX, l leaseRef, lease int64) (int64, bool, error) {
	until, err := pgdb.New(db).Extend(ctx, pgdb.ExtendParams{
		LeaseMillis: lease,
		Scope:       l.scope,
		Key:         l.key,
		LeaseToken:  sql.NullString{String: l.token, Valid: true},
		Fence:       l.fence,
		Now:         e.at(),
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return until.Int64, err == nil, classify(err)
}

func (postgresEngine) purgeBatch(ctx context.Context, db DBTX, now int64, limit int) (int64, error) {
	n, err := pgdb.New(db).PurgeBatch(ctx, pgdb.PurgeBatchParams{Now: now, BatchSize: int32(min(limit, math.MaxInt32))})
	return n, classify(err)
}

func (postgresEngine) stats(ctx context.Context, db DBTX, now int64) (statsRow, error) {
	row, err := pgdb.New(db).Stats(ctx, now)
	if err != nil {
		return statsRow{}, classify(err)
	}
	return statsRow{
		inFlight:  row.InFlight,
		completed: row.Completed,
		expired:   row.Expired,
		oldest:    row.OldestCreatedAt,
		newest:    row.NewestCreatedAt,
	}, nil
}

// Retryable SQLSTATEs (PostgreSQL documentation, Appendix A, class 40,
// "Transaction Rollback"; and 13.2.2 and 13.2.3 on the repeatable read and
// serializable levels): the transaction lost a race that a new attempt of
// the whole transaction may win.
const (
	sqlstateSerializationFailure = "40001"
	sqlstateDeadlockDetected     = "40P01"
)

// classify marks the errors that a retry of the caller's transaction may
// cure with ErrRetryable, keeping the *pgconn.PgError reachable.
func classify(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.Code == sqlstateSerializationFailure || pg.Code == sqlstateDeadlockDetected) {
		return &retryableError{err: err}
	}
	return err
}
