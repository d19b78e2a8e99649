package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/idemledger/idemledger/ledger/internal/sqlitedb"
)

// sqliteEngine runs the queries of queries/sqlite through the
// sqlc-generated package. Its clock is the process's (Config.Now): SQLite
// serves one machine, whose processes share that clock.
type sqliteEngine struct {
	clock func() time.Time
}

var _ engine = sqliteEngine{}

func (e sqliteEngine) now(context.Context, DBTX) (int64, error) { return e.clock().UnixMilli(), nil }

func (e sqliteEngine) claim(ctx context.Context, db DBTX, a claimArgs) (claimed, error) {
	now := e.clock().UnixMilli()
	row, err := sqlitedb.New(db).Claim(ctx, sqlitedb.ClaimParams{
		Scope:          a.req.Scope,
		Key:            a.req.Key,
		Fingerprint:    a.req.Fingerprint[:],
		LeaseToken:     sql.NullString{String: a.token, Valid: true},
		LeaseExpiresAt: sql.NullInt64{Int64: now + a.lease, Valid: true},
		Now:            now,
		ExpiresAt:      now + a.ttl,
	})
	if errors.Is(err, sql.ErrNoRows) {
		return claimed{}, nil
	}
	if err != nil {
		return claimed{}, err
	}
	return claimed{won: true, fence: row.Fence, leaseExpiresAt: now + a.lease}, nil
}

func (e sqliteEngine) get(ctx context.Context, db DBTX, scope, key string) (*Record, int64, error) {
	now := e.clock().UnixMilli()
	row, err := sqlitedb.New(db).Get(ctx, sqlitedb.GetParams{Scope: scope, Key: key})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, now, ErrNotFound
	}
	if err != nil {
		return nil, now, err
	}
	r, err := storedRow(row).record()
	return r, now, err
}

func (e sqliteEngine) complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, ttl int64) (bool, error) {
	headers, err := headerJSON(out)
	if err != nil {
		return false, err
	}
	now := e.clock().UnixMilli()
	n, err := sqlitedb.New(db).Complete(ctx, sqlitedb.CompleteParams{
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
	return n == 1, err
}

func (sqliteEngine) release(ctx context.Context, db DBTX, l leaseRef) (bool, error) {
	n, err := sqlitedb.New(db).Release(ctx, sqlitedb.ReleaseParams{
		Scope:      l.scope,
		Key:        l.key,
		LeaseToken: sql.NullString{String: l.token, Valid: true},
		Fence:      l.fence,
	})
	return n == 1, err
}

func (e sqliteEngine) extend(ctx context.Context, db DBTX, l leaseRef, lease int64) (int64, bool, error) {
	until := e.clock().UnixMilli() + lease
	n, err := sqlitedb.New(db).Extend(ctx, sqlitedb.ExtendParams{
		LeaseExpiresAt: sql.NullInt64{Int64: until, Valid: true},
		Scope:          l.scope,
		Key:            l.key,
		LeaseToken:     sql.NullString{String: l.token, Valid: true},
		Fence:          l.fence,
	})
	return until, n == 1, err
}

func (sqliteEngine) purgeBatch(ctx context.Context, db DBTX, now int64, limit int) (int64, error) {
	return sqlitedb.New(db).PurgeBatch(ctx, sqlitedb.PurgeBatchParams{Now: now, BatchSize: int64(limit)})
}

func (sqliteEngine) stats(ctx context.Context, db DBTX, now int64) (statsRow, error) {
	row, err := sqlitedb.New(db).Stats(ctx, now)
	if err != nil {
		return statsRow{}, err
	}
	return statsRow{
		inFlight:  row.InFlight,
		completed: row.Completed,
		expired:   row.Expired,
		oldest:    row.OldestCreatedAt,
		newest:    row.NewestCreatedAt,
	}, nil
}
