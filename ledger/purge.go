package ledger

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// DefaultPurgeBatchSize is the batch size Purge uses when
// PurgeOptions.BatchSize is zero.
const DefaultPurgeBatchSize = 1000

// PurgeOptions tunes Purge.
type PurgeOptions struct {
	// BatchSize is the most rows one DELETE removes (default
	// DefaultPurgeBatchSize; negative is ErrInvalidRequest). Each batch is
	// its own transaction, so a smaller batch holds SQLite's write lock for
	// a shorter time and lets claims in between.
	BatchSize int

	// Progress, when set, is called after every batch with the number of
	// rows deleted so far by this Purge, so a long purge can report how it
	// goes. It runs on Purge's goroutine, between batches.
	Progress func(deleted int64)
}

// batchDone, when set (in-package benchmarks), is told how long each batch
// of Purge took. Tests that set it do not run in parallel.
var batchDone func(rows int64, took time.Duration)

// Purge deletes expired records in batches until none is left and returns
// how many it deleted, also when it stops on an error (ctx cancelled, a
// database error). It runs on the driver's pool, each batch a transaction
// of its own, committed and counted or rolled back whole, so the count is
// exact even when ctx ends in the middle of a batch. ctx is heeded before
// each batch and during its DELETE; a batch whose DELETE has run commits.
//
// A record is expired (see Record.Expired) when its ExpiresAt has passed
// and, if it is still in flight, its lease has run out too. So Purge never
// deletes a live lease, nor a completed record before its expiry however
// old it is. An in-flight record whose holder died is deleted once both its
// lease and its ExpiresAt (claim time plus TTL) have passed; until then a
// retry with the same fingerprint can take it over. Expiry is judged
// against the time Purge starts, so rows that expire while it runs wait
// for the next Purge. Claim already ignores expired records: Purge only
// reclaims space.
func (l *Ledger[TTx]) Purge(ctx context.Context, opts PurgeOptions) (int64, error) {
	if err := l.checkCall(ctx); err != nil {
		return 0, err
	}
	size := opts.BatchSize
	switch {
	case size == 0:
		size = DefaultPurgeBatchSize
	case size < 0:
		return 0, invalidRequest("purge batch size %d is negative", size)
	}
	now, err := l.nowMillis(ctx, l.db)
	if err != nil {
		return 0, wrapOp("purge", classify(err))
	}
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, wrapOp("purge", err)
		}
		start := time.Now()
		n, err := l.purgeBatch(ctx, now, size)
		if err != nil {
			return total, wrapOp("purge", classify(err))
		}
		total += n
		if opts.Progress != nil {
			opts.Progress(total)
		}
		if batchDone != nil {
			batchDone(n, time.Since(start))
		}
		if n < int64(size) {
			return total, nil
		}
	}
}

// purgeBatch deletes one batch in a transaction of its own and returns how
// many rows it deleted for good: an autocommit DELETE can commit while the
// driver reports that ctx ended (modernc does), and the batch would go
// uncounted. Only the DELETE runs under ctx; if ctx cuts it short, the
// transaction is rolled back. The transaction itself is begun without
// ctx's cancellation, because its COMMIT runs with the context the
// transaction was begun with (pgx's database/sql driver commits so), and a
// COMMIT the server carried out must not report ctx's end.
func (l *Ledger[TTx]) purgeBatch(ctx context.Context, now int64, size int) (int64, error) {
	// A pooled connection that an earlier cancellation left closing (pgx
	// closes a connection whose query was cancelled, in the background)
	// fails the batch's statement with driver.ErrBadConn, which
	// database/sql does not retry inside a transaction. Nothing was
	// deleted then, so the batch is tried again on another connection.
	for attempt := 1; ; attempt++ {
		n, err := l.purgeBatchTx(ctx, now, size)
		if err == nil {
			return n, nil
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// The statement failed because ctx ended (pgx then reports
			// the connection it closed as bad): say so first.
			return 0, fmt.Errorf("%w: %w", cerr, err)
		}
		if !errors.Is(err, sqldriver.ErrBadConn) || attempt == 3 {
			return 0, err
		}
	}
}

// purgeBatchTx is one attempt of purgeBatch.
func (l *Ledger[TTx]) purgeBatchTx(ctx context.Context, now int64, size int) (int64, error) {
	bctx := context.WithoutCancel(ctx)
	tx, err := l.d.Begin(bctx)
	if err != nil {
		return 0, err
	}
	n, err := l.d.TxExecutor(tx).PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: size})
	if err != nil {
		if rerr := l.d.Rollback(bctx, tx); rerr != nil {
			return 0, errors.Join(err, rerr)
		}
		return 0, err
	}
	if err := l.d.Commit(bctx, tx); err != nil {
		return 0, err
	}
	return n, nil
}
