package ledger

import (
	"context"
	"database/sql"
)

// DBTX is what every ledger operation runs on: a *sql.DB, *sql.Tx or
// *sql.Conn. The ledger does not begin, commit or roll back transactions
// (Mutate only sets savepoints inside the caller's): what commits together
// is the caller's decision. A nil DBTX, or one holding a nil *sql.DB,
// *sql.Tx or *sql.Conn, is refused with ErrInvalidRequest.
type DBTX interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// engine is everything the ledger needs from a database engine. The core
// (claim.go, lease.go, mutate.go, purge.go) talks only to it; each engine
// wraps its own sqlc-generated package and owns the clock: the SQLite
// engine reads Config.Now (time.Now by default) in the process, the
// PostgreSQL engine reads the server's clock inside each statement unless
// Config.Now is set. Times are Unix milliseconds; durations are passed as
// milliseconds and added to the engine's "now" by the engine.
//
// The database handle is the database/sql DBTX today. A native pgx entry
// point (a pgx.Tx) would add an engine over sqlc's pgx/v5 output behind the
// same methods; Mutate's own statements (savepoints) already go through
// the small txn interface (mutate.go), not *sql.Tx.
type engine interface {
	// now returns the engine's current time: Purge's cut-off, Stats.
	now(ctx context.Context, db DBTX) (int64, error)
	// claim runs the atomic conditional write (Ledger.Claim). won is false, with no
	// error, when the existing row stands.
	claim(ctx context.Context, db DBTX, a claimArgs) (claimed, error)
	// get returns the row, or an error wrapping ErrNotFound, and the
	// engine's time at the read, by which Claim explains a lost upsert.
	get(ctx context.Context, db DBTX, scope, key string) (r *Record, now int64, err error)
	// complete, release and extend report whether the lease still held
	// (a row matched scope, key, token and fence while in flight).
	// complete sets expires_at to its now plus ttl; extend sets the lease
	// to its now plus lease and returns the new end of the lease.
	complete(ctx context.Context, db DBTX, l leaseRef, out Outcome, ttl int64) (bool, error)
	release(ctx context.Context, db DBTX, l leaseRef) (bool, error)
	// abandon ends the lease held by token, whatever its fence, as of the
	// claim's own time: the cleanup of a claim that may have written
	// without its caller learning of it.
	abandon(ctx context.Context, db DBTX, scope, key, token string) error
	extend(ctx context.Context, db DBTX, l leaseRef, lease int64) (until int64, ok bool, err error)
	// purgeBatch deletes up to limit rows expired at now and returns how
	// many.
	purgeBatch(ctx context.Context, db DBTX, now int64, limit int) (int64, error)
	// stats counts rows for Ledger.Stats; times in the result are Unix
	// milliseconds, 0 for an empty table.
	stats(ctx context.Context, db DBTX, now int64) (statsRow, error)
}

type statsRow struct {
	inFlight, completed, expired int64
	oldest, newest               int64
}

// claimArgs is one claim attempt; lease and ttl are milliseconds from the
// engine's now.
type claimArgs struct {
	req        Request
	token      string
	lease, ttl int64
}

// claimed is the upsert's answer: whether it won, and if so the fence and
// the end of the new lease (Unix milliseconds). An engine that lost after
// reading the record that stands returns it in record, with the time of
// the read (Unix milliseconds), so that Claim need not read it again.
type claimed struct {
	won                   bool
	fence, leaseExpiresAt int64
	record                *Record
	now                   int64
}

// leaseRef identifies a held lease: the row, the token, the fence.
type leaseRef struct {
	scope, key string
	token      string
	fence      int64
}
