package ledger

import (
	"context"
	"database/sql"
)

// DBTX is what every ledger operation runs on: a *sql.DB, *sql.Tx or
// *sql.Conn. The ledger does not begin, commit or roll back transactions
// (Mutate only sets savepoints inside the caller's): what commits together
// is the caller's decision.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// engine is everything the ledger needs from a database engine. The core
// (claim.go, lease.go, mutate.go, purge.go) talks only to it; each engine
// wraps its own sqlc-generated package. Times are Unix milliseconds.
type engine interface {
	// claim runs the atomic conditional upsert. won is false, with no
	// error, when the existing row stands.
	claim(ctx context.Context, db DBTX, a claimArgs) (fence int64, won bool, err error)
	// get returns the row, or an error wrapping ErrNotFound.
	get(ctx context.Context, db DBTX, scope, key string) (*Record, error)
	// complete, release and extend report whether the lease still held
	// (a row matched scope, key, token and fence while in flight).
	complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, now, expiresAt int64) (bool, error)
	release(ctx context.Context, db DBTX, l leaseRef) (bool, error)
	extend(ctx context.Context, db DBTX, l leaseRef, leaseExpiresAt int64) (bool, error)
	// purgeBatch deletes up to limit expired rows and returns how many.
	purgeBatch(ctx context.Context, db DBTX, now int64, limit int) (int64, error)
	// stats counts rows for Ledger.Stats; times in the result are Unix
	// milliseconds, 0 for an empty table.
	stats(ctx context.Context, db DBTX, now int64) (statsRow, error)
}

type statsRow struct {
	inFlight, completed, expired int64
	oldest, newest               int64
}

type claimArgs struct {
	req            Request
	token          string
	now            int64
	leaseExpiresAt int64
	expiresAt      int64
}

// leaseRef identifies a held lease: the row, the token, the fence.
type leaseRef struct {
	scope, key string
	token      string
	fence      int64
}
