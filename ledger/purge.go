package ledger

import (
	"context"
	"time"
)

// DefaultPurgeBatchSize is the batch size Purge uses when
// PurgeOptions.BatchSize is zero.
const DefaultPurgeBatchSize = 1000

// PurgeOptions tunes Purge.
type PurgeOptions struct {
	// BatchSize is the most rows one DELETE removes (default
	// DefaultPurgeBatchSize; negative is ErrInvalidRequest). On a *sql.DB
	// each batch is its own transaction, so a smaller batch holds SQLite's
	// write lock for a shorter time and lets claims in between.
	BatchSize int

	// Progress, when set, is called after every batch with the number of
	// rows deleted so far by this Purge, so a long purge can report how it
	// goes. It runs on Purge's goroutine, between batches.
	Progress func(deleted int64)

	// batchDone, when set (in-package benchmarks), is told how long each
	// batch took.
	batchDone func(rows int64, took time.Duration)
}

// Purge deletes expired records in batches until none is left and returns
// how many it deleted, also when it stops on an error (ctx cancelled
// between batches, a database error).
//
// A record is expired (see Record.Expired) when its ExpiresAt has passed
// and, if it is still in flight, its lease has run out too. So Purge never
// deletes a live lease, nor a completed record before its expiry however
// old it is. An in-flight record whose holder died is deleted once both its
// lease and its ExpiresAt (claim time plus TTL) have passed; until then a
// retry with the same fingerprint can take it over. Expiry is judged
// against the time Purge starts, so rows that expire while it runs wait
// for the next Purge.
//
// Claim already ignores expired records: Purge only reclaims space. Pass a
// *sql.DB (not a transaction) to keep every batch short.
func (l *Ledger) Purge(ctx context.Context, db DBTX, opts PurgeOptions) (int64, error) {
	if err := l.checkCall(ctx, db); err != nil {
		return 0, err
	}
	size := opts.BatchSize
	switch {
	case size == 0:
		size = DefaultPurgeBatchSize
	case size < 0:
		return 0, invalidRequest("purge batch size %d is negative", size)
	}
	now, err := l.eng.now(ctx, db)
	if err != nil {
		return 0, wrapOp("purge", err)
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, wrapOp("purge", err)
		}
		start := time.Now()
		n, err := l.eng.purgeBatch(ctx, db, now, size)
		if err != nil {
			return total, wrapOp("purge", err)
		}
		total += n
		if opts.Progress != nil {
			opts.Progress(total)
		}
		if opts.batchDone != nil {
			opts.batchDone(n, time.Since(start))
		}
		if n < int64(size) {
			return total, nil
		}
	}
}
