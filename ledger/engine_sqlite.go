package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemledger/idemledger/ledger/internal/sqlitedb"
)

// sqliteEngine runs the queries of queries/sqlite through the
// sqlc-generated package. It has no state: sqlitedb.New only wraps db.
type sqliteEngine struct{}

var _ engine = sqliteEngine{}

func (sqliteEngine) claim(ctx context.Context, db DBTX, a claimArgs) (int64, bool, error) {
	row, err := sqlitedb.New(db).Claim(ctx, sqlitedb.ClaimParams{
		Scope:          a.req.Scope,
		Key:            a.req.Key,
		Fingerprint:    a.req.Fingerprint[:],
		LeaseToken:     sql.NullString{String: a.token, Valid: true},
		LeaseExpiresAt: sql.NullInt64{Int64: a.leaseExpiresAt, Valid: true},
		Now:            a.now,
		ExpiresAt:      a.expiresAt,
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return row.Fence, true, nil
}

func (sqliteEngine) get(ctx context.Context, db DBTX, scope, key string) (*Record, error) {
	row, err := sqlitedb.New(db).Get(ctx, sqlitedb.GetParams{Scope: scope, Key: key})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r := &Record{
		Scope:     row.Scope,
		Key:       row.Key,
		Fence:     row.Fence,
		CreatedAt: fromMillis(row.CreatedAt),
		ExpiresAt: fromMillis(row.ExpiresAt),
	}
	if len(row.Fingerprint) != len(r.Fingerprint) {
		return nil, fmt.Errorf("stored fingerprint is %d bytes", len(row.Fingerprint))
	}
	copy(r.Fingerprint[:], row.Fingerprint)
	switch row.State {
	case "in_flight":
		r.State = StateInFlight
		r.LeaseExpiresAt = fromMillis(row.LeaseExpiresAt.Int64)
	case "completed":
		r.State = StateCompleted
		r.CompletedAt = fromMillis(row.CompletedAt.Int64)
		r.Outcome.Status = int(row.Status.Int64)
		if len(row.Body) > 0 {
			r.Outcome.Body = row.Body
		}
		if row.Headers != nil {
			if err := json.Unmarshal(row.Headers, &r.Outcome.Header); err != nil {
				return nil, fmt.Errorf("stored headers: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("stored state %q", row.State)
	}
	return r, nil
}

// complete keeps http.Header as its JSON object: names sorted, the values
// of each name in their original order.
func (sqliteEngine) complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, now, expiresAt int64) (bool, error) {
	var headers []byte
	if out.Header != nil {
		var err error
		if headers, err = json.Marshal(out.Header); err != nil {
			return false, err
		}
	}
	n, err := sqlitedb.New(db).Complete(ctx, sqlitedb.CompleteParams{
		Status:     sql.NullInt64{Int64: int64(out.Status), Valid: true},
		Headers:    headers,
		Body:       out.Body,
		Now:        sql.NullInt64{Int64: now, Valid: true},
		ExpiresAt:  expiresAt,
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

func (sqliteEngine) extend(ctx context.Context, db DBTX, l leaseRef, leaseExpiresAt int64) (bool, error) {
	n, err := sqlitedb.New(db).Extend(ctx, sqlitedb.ExtendParams{
		LeaseExpiresAt: sql.NullInt64{Int64: leaseExpiresAt, Valid: true},
		Scope:          l.scope,
		Key:            l.key,
		LeaseToken:     sql.NullString{String: l.token, Valid: true},
		Fence:          l.fence,
	})
	return n == 1, err
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
