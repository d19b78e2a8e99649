package ledger

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pace"
	"github.com/idemledger/idemledger/internal/retry"
	"github.com/idemledger/idemledger/internal/spans"
)

// DefaultPurgeBatchSize is the most rows a batch of Purge deletes when
// [PurgeOptions.BatchSize] is zero; within it, batches are sized by time (see
// [PurgeOptions.BatchTime]).
const DefaultPurgeBatchSize = 10_000

// DefaultPurgeBatchTime is how long a batch of Purge aims to take when
// [PurgeOptions.BatchTime] is zero. A request that comes during a batch
// waits for the rest of it, so shorter batches shorten the requests' wait
// beside a purge; they cost the purge no rows a second on SQLite, where
// the checkpoints the purge waits for between batches set its pace
// (BENCHMARKS.md, "SQLite purge").
const DefaultPurgeBatchTime = 2 * time.Millisecond

// DefaultPurgeRowLockBatchSize is the size of every batch of Purge when
// [PurgeOptions] is zero on an engine that locks rows as a transaction writes
// them (PostgreSQL, MySQL: [driver.Driver.BeginLocks] false). A batch there
// locks only expired rows, which no request waits for, so it need not be
// short. (Batches sized by time once collapsed on PostgreSQL: the rows a
// purge deleted stay in the expiry index as dead entries until VACUUM, and
// each batch started from the head of the index and stepped over all of
// them, so that a time bound shrank batches to a row or two. Batches there
// now start where the one before stopped; MySQL's still start at the head,
// where InnoDB's own purge removes the entries.)
const DefaultPurgeRowLockBatchSize = 1000

// DefaultPurgeRowLockPause is the pause between two batches of Purge when
// [PurgeOptions]' BatchSize and BatchTime are zero on an engine that locks
// rows (see [DefaultPurgeRowLockBatchSize]). It paces the purge for the
// requests beside it, whose commits wait for the disk behind the purge's
// WAL: a batch of 1,000 rows takes a few milliseconds, and without a pause
// the purge writes WAL in a burst that every request's commit waits
// behind (BENCHMARKS.md, "PostgreSQL purge", has both runs). It bounds a
// purge to about 33,000 rows a second; a set Pause, or a set BatchSize,
// overrides it.
const DefaultPurgeRowLockPause = 30 * time.Millisecond

// firstPurgeBatch is the size of a time-bounded purge's first batch, small
// enough to stay within a few milliseconds on a cold, large table.
const firstPurgeBatch = 64

// PurgeOptions tunes Purge. The zero value is, on SQLite, a purge whose
// batches each hold the write lock about [DefaultPurgeBatchTime]; on engines
// that lock rows, batches of [DefaultPurgeRowLockBatchSize] rows with
// [DefaultPurgeRowLockPause] between them.
type PurgeOptions struct {
	// BatchSize is the most rows one batch deletes (negative is
	// [ErrInvalidRequest]). Each batch is its own transaction, which holds
	// the write lock on SQLite (and row locks on PostgreSQL) while it runs.
	//
	// Zero means [DefaultPurgeBatchSize] with batches sized by time: the
	// first deletes a few rows, and each next one as many as the last
	// deleted in BatchTime, at most twice as many as the last; on engines
	// that lock rows rather than the database, zero with a zero BatchTime
	// means fixed batches of [DefaultPurgeRowLockBatchSize] rows. A set
	// BatchSize with a zero BatchTime fixes every batch at BatchSize rows,
	// as before batches were timed.
	BatchSize int

	// BatchTime is how long one batch should take (negative is
	// [ErrInvalidRequest]): batch sizes follow the rows per second measured
	// on the batches before, between one row and BatchSize. Zero means
	// [DefaultPurgeBatchTime] when BatchSize is zero too, and no time bound
	// otherwise. A batch may take longer than BatchTime when the table's
	// pages are not in memory; the next one is then smaller.
	BatchTime time.Duration

	// Pause is a sleep between two batches (negative is [ErrInvalidRequest]).
	// Zero means none, except with a zero BatchSize and BatchTime on an
	// engine that locks rows: [DefaultPurgeRowLockPause] there (the requests'
	// commits wait for the disk behind the purge's WAL). On
	// SQLite, within one process nothing needs it: a batch's transaction
	// queues behind the writers that waited during the batch before
	// (behind the pool's writers; see package sqlite, Writers in order).
	// Writers in other processes on the same SQLite file poll for the lock
	// instead, and a Pause about as long as BatchTime gives them their turn.
	Pause time.Duration

	// NoReclaim skips giving the space of the deleted records back at the
	// end (see [Ledger.Reclaim], which Purge otherwise runs in its
	// incremental form after deleting anything).
	NoReclaim bool

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
// Batches delete the records that expired first, in the order of the
// expiry index, and are kept short (see [PurgeOptions]): a purge of millions
// of records runs beside the requests, each batch holding the write lock a
// few milliseconds, and the writers that queued meanwhile go before the
// next batch. Between two batches Purge also waits for the work the
// engine does after a write (on SQLite, the pool's checkpoint of its WAL:
// see [driver.Settler]), so that a purge never runs beside it. On
// PostgreSQL each batch starts where the one before stopped (the expiry
// instant of the last record it deleted) instead of at the head of the
// index, which still holds the entries of the rows deleted until VACUUM
// runs; so a record that another transaction held when its batch reached
// it (a claim taking it over, another purger's batch) is left for the
// next Purge.
//
// After deleting anything, Purge gives the space back as far as it can in
// short steps ([Ledger.Reclaim], incremental form), unless opts.NoReclaim;
// an error there is returned with the count of the deleted records.
//
// A record is expired (see [Record.Expired]) when its ExpiresAt has passed
// and, if it is still in flight, its lease has run out too. So Purge never
// deletes a live lease, nor a completed record before its expiry however
// old it is. An in-flight record whose holder died is deleted once both its
// lease and its ExpiresAt (claim time plus TTL) have passed; until then a
// retry with the same fingerprint can take it over. Expiry is judged
// against the time Purge starts, so rows that expire while it runs wait
// for the next Purge. Claim already ignores expired records: Purge only
// reclaims space. [Stats.PurgeBacklog] tells whether purges keep up.
func (l *Ledger[TTx]) Purge(ctx context.Context, opts PurgeOptions) (int64, error) {
	if err := l.checkCall(ctx); err != nil {
		return 0, err
	}
	switch {
	case opts.BatchSize < 0:
		return 0, invalidRequest("purge batch size %d is negative", opts.BatchSize)
	case opts.BatchTime < 0:
		return 0, invalidRequest("purge batch time %v is negative", opts.BatchTime)
	case opts.Pause < 0:
		return 0, invalidRequest("purge pause %v is negative", opts.Pause)
	}
	size, most, target, pause := purgePlan(opts, l.d.BeginLocks())
	now, err := l.nowMillis(ctx, l.db)
	if err != nil {
		return 0, wrapOp("purge", classify(err))
	}
	var total, after int64
	for {
		if err := ctx.Err(); err != nil {
			return total, wrapOp("purge", err)
		}
		start := time.Now()
		n, last, err := l.purgeBatch(ctx, now, after, size)
		if err != nil {
			return total, wrapOp("purge", classify(err))
		}
		took := time.Since(start)
		if last > 0 {
			after = last
		}
		total += n
		if opts.Progress != nil {
			opts.Progress(total)
		}
		if batchDone != nil {
			batchDone(n, took)
		}
		if n < int64(size) {
			break
		}
		if st, ok := l.d.(driver.Settler); ok {
			// Background work: the engine's own work after the batch
			// (SQLite's checkpoint) goes first, not beside the next one.
			if err := st.Settle(ctx); err != nil {
				return total, wrapOp("purge", classify(err))
			}
		}
		if target > 0 {
			size = pace.Next(size, most, target, took)
		}
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
		}
	}
	// The steps of operations that ended (their records completed, or
	// gone, above or before), once older than the TTL: a record released
	// by a driver that deletes it keeps its steps that long for its retry.
	if _, err := l.purgeSteps(ctx, now-l.ttl.Milliseconds(), min(most, DefaultPurgeRowLockBatchSize)); err != nil {
		return total, wrapOp("purge", err)
	}
	if total > 0 && !opts.NoReclaim {
		if _, err := l.reclaim(ctx, false); err != nil {
			return total, wrapOp("purge", err)
		}
	}
	return total, nil
}

// purgePlan turns opts into the first batch's size, the most rows a batch
// deletes, the time a batch aims at (0: fixed batches) and the pause
// between batches, with the defaults for an engine whose Begin takes the
// write lock (beginLocks) or not.
func purgePlan(opts PurgeOptions, beginLocks bool) (size, most int, target, pause time.Duration) {
	most, target, pause = opts.BatchSize, opts.BatchTime, opts.Pause
	if most == 0 && target == 0 && !beginLocks {
		most = DefaultPurgeRowLockBatchSize
		if pause == 0 {
			pause = DefaultPurgeRowLockPause
		}
	}
	if most == 0 {
		most = DefaultPurgeBatchSize
		if target == 0 {
			target = DefaultPurgeBatchTime
		}
	}
	size = most
	if target > 0 {
		size = min(most, firstPurgeBatch)
	}
	return size, most, target, pause
}

// purgeBatch deletes one batch, from after on (see
// driver.PurgeBatchParams), in a transaction of its own and returns how
// many rows it deleted for good and the driver's Last, where the next
// batch starts. For good, because an autocommit DELETE can commit while
// the driver reports that ctx ended (modernc does), and the batch would go
// uncounted. Only the DELETE runs under ctx; if ctx cuts it short, the
// transaction is rolled back. The transaction itself is begun without
// ctx's cancellation, because its COMMIT runs with the context the
// transaction was begun with (pgx's database/sql driver commits so), and a
// COMMIT the server carried out must not report ctx's end.
func (l *Ledger[TTx]) purgeBatch(ctx context.Context, now, after int64, size int) (deleted, last int64, err error) {
	// A pooled connection that an earlier cancellation left closing (pgx
	// closes a connection whose query was cancelled, in the background)
	// fails the batch's statement with driver.ErrBadConn, which
	// database/sql does not retry inside a transaction. Nothing was
	// deleted then, so the batch is tried again on another connection.
	// A batch that deadlocked with another purger's (MySQL: both delete
	// from the head of the expiry index) was rolled back whole, and is
	// tried again after a jittered pause, so that the two do not meet
	// again at once.
	bad, conflicts := 0, 0
	for {
		r, err := l.purgeBatchTx(ctx, driver.PurgeBatchParams{Now: now, After: after, Limit: size})
		if err == nil {
			return r.Deleted, r.Last, nil
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// The statement failed because ctx ended (pgx then reports
			// the connection it closed as bad): say so first.
			return 0, 0, fmt.Errorf("%w: %w", cerr, err)
		}
		switch {
		case errors.Is(err, sqldriver.ErrBadConn) && bad < 2:
			bad++
		case errors.Is(err, driver.ErrRetryable) && !errors.Is(err, driver.ErrBusy) && conflicts < purgeConflictTries:
			// Not a busy store: that error came after a whole busy or lock
			// timeout already, and ten more would hold the caller for ten.
			conflicts++
			if err := retry.Sleep(ctx, retry.Backoff(purgeConflictWait, 50*purgeConflictWait, conflicts)); err != nil {
				return 0, 0, err
			}
		default:
			return 0, 0, err
		}
	}
}

// purgeConflictTries bounds the retries of a batch that deadlocked with
// another purger's; purgeConflictWait is the first pause (see
// [retry.Backoff]). Four purgers on one MariaDB table failed one test run in
// ten with five immediate retries.
const (
	purgeConflictTries = 10
	purgeConflictWait  = 2 * time.Millisecond
)

// purgeBatchTx is one attempt of purgeBatch.
func (l *Ledger[TTx]) purgeBatchTx(ctx context.Context, p driver.PurgeBatchParams) (driver.PurgeBatchResult, error) {
	bctx := context.WithoutCancel(ctx)
	var t0, t1, t2 time.Time
	if spans.On() {
		t0 = time.Now()
	}
	tx, err := l.d.Begin(driver.Background(bctx))
	if err != nil {
		return driver.PurgeBatchResult{}, err
	}
	if !t0.IsZero() {
		t1 = time.Now()
	}
	r, err := l.d.TxExecutor(tx).PurgeBatch(ctx, p)
	if err != nil {
		if rerr := l.d.Rollback(bctx, tx); rerr != nil {
			return driver.PurgeBatchResult{}, errors.Join(err, rerr)
		}
		return driver.PurgeBatchResult{}, err
	}
	if !t0.IsZero() {
		t2 = time.Now()
	}
	if err := l.d.Commit(bctx, tx); err != nil {
		return driver.PurgeBatchResult{}, err
	}
	if !t0.IsZero() {
		t3 := time.Now()
		spans.Add(spans.Span{Kind: spans.PurgeBegin, Start: t0, Took: t1.Sub(t0)})
		spans.Add(spans.Span{Kind: spans.PurgeDelete, Start: t1, Took: t2.Sub(t1), N: r.Deleted})
		spans.Add(spans.Span{Kind: spans.PurgeCommit, Start: t2, Took: t3.Sub(t2)})
	}
	return r, nil
}
