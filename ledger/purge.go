package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
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
// how many it deleted, also when it stops on an error (ctx cancelled, a
// database error): on a *sql.DB or *sql.Conn each batch is a transaction
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
		n, err := l.purgeBatch(ctx, db, now, size)
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

// beginner is a DBTX that can begin a transaction: *sql.DB and *sql.Conn.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// purgeBatch deletes one batch and returns how many rows it deleted for
// good. On a pool or a connection the batch runs in a transaction of its
// own: an autocommit DELETE can commit while the driver reports that ctx
// ended (modernc does), and the batch would go uncounted. Only the DELETE
// runs under ctx; if ctx cuts it short, the transaction is rolled back.
// The transaction itself is begun without ctx's cancellation, because its
// COMMIT runs with the context the transaction was begun with (pgx's
// database/sql driver commits so), and a COMMIT the server carried out
// must not report ctx's end. On a *sql.Tx nothing commits here: the
// caller's commit decides for all.
func (l *Ledger) purgeBatch(ctx context.Context, db DBTX, now int64, size int) (int64, error) {
	b, ok := db.(beginner)
	if !ok {
		return l.eng.purgeBatch(ctx, db, now, size)
	}
	// A pooled connection that an earlier cancellation left closing (pgx
	// closes a connection whose query was cancelled, in the background)
	// fails the batch's statement with driver.ErrBadConn, which
	// database/sql does not retry inside a transaction. Nothing was
	// deleted then, so the batch is tried again on another connection.
	for attempt := 1; ; attempt++ {
		n, err := l.purgeBatchTx(ctx, b, now, size)
		if err == nil {
			return n, nil
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// The statement failed because ctx ended (pgx then reports
			// the connection it closed as bad): say so first.
			return 0, fmt.Errorf("%w: %w", cerr, err)
		}
		if !errors.Is(err, driver.ErrBadConn) || attempt == 3 {
			return 0, err
		}
	}
}

// purgeBatchTx is one attempt of purgeBatch on a pool or a connection.
func (l *Ledger) purgeBatchTx(ctx context.Context, b beginner, now int64, size int) (int64, error) {
	tx, err := b.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return 0, err
	}
	n, err := l.eng.purgeBatch(ctx, tx, now, size)
	if err != nil {
		if rerr := ignoreDone(tx.Rollback()); rerr != nil {
			return 0, errors.Join(err, rerr)
		}
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}

// ignoreDone drops sql.ErrTxDone, the rollback error of a transaction that
// is already over (a driver may end it when a statement's context ends).
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
