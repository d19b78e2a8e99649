package ledger

import (
	"context"

	"github.com/idemledger/idemledger/driver"
)

// ReclaimOptions tunes Reclaim.
type ReclaimOptions struct {
	// Full rebuilds the storage completely instead of in short steps, and
	// blocks the ledger's writers until it is done: on SQLite a VACUUM
	// (which also turns a file created before incremental auto-vacuum into
	// one that has it, once), on PostgreSQL a VACUUM FULL, which takes the
	// table's exclusive lock and needs room for a copy of it. For a
	// maintenance window.
	Full bool
}

// Reclaimed is what Reclaim did: the bytes the ledger's storage took
// before and after (on SQLite the database file and its WAL; on PostgreSQL
// the table with its indexes and TOAST).
type Reclaimed struct {
	Before, After int64
}

// Reclaim gives the space of deleted (purged) records back, on the
// driver's pool. Purge runs its incremental form after it deleted records,
// so an operator rarely needs it; idemledger reclaim runs it.
//
// Incremental (opts.Full false), it runs beside requests. On SQLite it
// returns the file's free pages to the file system in steps that each hold
// the write lock a few milliseconds (databases created by sqlite.Open use
// incremental auto-vacuum; one created before needs one Full run), and
// truncates the WAL once no reader uses it. On PostgreSQL it runs VACUUM
// (ANALYZE) on the table: the dead rows' space becomes reusable by new ones
// and the planner's statistics (and so Stats' estimate) are renewed, but
// the files do not shrink. See opts.Full for the blocking form.
//
// A driver that cannot reclaim anything returns a zero Reclaimed and nil.
// Errors are wrapped with "ledger: reclaim:".
func (l *Ledger[TTx]) Reclaim(ctx context.Context, opts ReclaimOptions) (Reclaimed, error) {
	if err := l.checkCall(ctx); err != nil {
		return Reclaimed{}, err
	}
	r, err := l.reclaim(ctx, opts.Full)
	if err != nil {
		return r, wrapOp("reclaim", err)
	}
	return r, nil
}

func (l *Ledger[TTx]) reclaim(ctx context.Context, full bool) (Reclaimed, error) {
	rc, ok := l.d.(driver.Reclaimer)
	if !ok {
		return Reclaimed{}, nil
	}
	before, after, err := rc.Reclaim(driver.Background(ctx), full)
	if err != nil {
		return Reclaimed{Before: before}, classify(err)
	}
	return Reclaimed{Before: before, After: after}, nil
}
