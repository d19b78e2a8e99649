package pgxv5

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// deferredTx is the pgx.Tx that Driver.Begin returns when the driver
// batches (batch.go): a connection taken from the pool whose BEGIN has not
// been sent yet. The first ledger statement run in it (Mutate's SAVEPOINT
// and claim) carries the BEGIN in its round trip; any other first statement
// sends BEGIN alone before it, through pgx's own Begin, as a plain
// transaction would. Mutate's last statements (the outcome and RELEASE
// SAVEPOINT) may carry the COMMIT too, when the caller owns the
// transaction (ledger.MutateOutcomeCommit): then the transaction is over
// when they return.
//
// Like pgx's transactions, it is for one goroutine at a time.
type deferredTx struct {
	conn *pgx.Conn
	// release gives the connection back to its pool (nil for a
	// *pgx.Conn); pgxpool drops a connection left in a transaction.
	release func()
	// inner is pgx's own transaction when BEGIN went alone; host is one
	// made on the connection after a batched BEGIN, for what only pgx's
	// transactions can do (pseudo-nested Begin, LargeObjects).
	inner, host pgx.Tx
	begun       bool // BEGIN was sent, alone or batched
	closed      bool
	// mode is how the driver batches (never batchNone here); queued are
	// the step records that travel with the COMMIT (step.go).
	mode   batchMode
	queued []queuedStmt
}

var _ pgx.Tx = (*deferredTx)(nil)

// batchBegin reports whether BEGIN is still to be sent, and if so marks it
// sent: the caller sends it ahead of its own statements.
func (t *deferredTx) batchBegin() bool {
	if t.closed || t.begun {
		return false
	}
	t.begun = true
	return true
}

// open returns the transaction to run a statement in: pgx's own (after
// sending BEGIN alone, if it was not sent yet), or nil to run it on the
// connection, which a batched BEGIN left in the transaction.
func (t *deferredTx) open(ctx context.Context) (pgx.Tx, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	if !t.begun {
		t.begun = true
		tx, err := t.conn.Begin(ctx)
		if err != nil {
			// No transaction: later statements must not run in
			// autocommit. Over, as pgx's Begin gives none then.
			t.end(ctx, err)
			return nil, err
		}
		t.inner = tx
	}
	return t.inner, nil
}

// checkBegun ends the transaction when a batched BEGIN left the
// connection outside a transaction (the BEGIN failed, or was never run), so
// that later statements fail with pgx.ErrTxClosed instead of running in
// autocommit.
func (t *deferredTx) checkBegun(ctx context.Context) {
	if !t.closed && t.inner == nil && t.conn.PgConn().TxStatus() == 'I' {
		t.end(ctx, nil)
	}
}

// end marks the transaction over, after a COMMIT or ROLLBACK that err
// answered, and gives the connection back.
func (t *deferredTx) end(ctx context.Context, err error) {
	t.closed = true
	if err != nil && t.conn.PgConn().TxStatus() != 'I' {
		// Left in an unknown state, as pgx's own transactions leave
		// their connection after such a failure: closed.
		_ = t.conn.Close(ctx)
	}
	if t.release != nil {
		t.release()
		t.release = nil
	}
}

// finish runs stmt (COMMIT or ROLLBACK) when the transaction is open, and
// ends it.
func (t *deferredTx) finish(ctx context.Context, commit bool) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	queued := t.queued
	t.queued = nil
	if commit && len(queued) > 0 {
		return t.commitQueued(ctx, queued)
	}
	var err error
	switch {
	case t.inner != nil && commit:
		err = t.inner.Commit(ctx)
	case t.inner != nil:
		err = t.inner.Rollback(ctx)
	case !t.begun:
		// Nothing was sent: nothing to end.
	case commit:
		var tag pgconn.CommandTag
		tag, err = t.conn.Exec(ctx, "commit")
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
	default:
		if _, err = t.conn.Exec(ctx, "rollback"); err != nil {
			err = fmt.Errorf("rollback failed: %w", err)
		}
	}
	t.end(ctx, err)
	return err
}

func (t *deferredTx) Commit(ctx context.Context) error   { return t.finish(ctx, true) }
func (t *deferredTx) Rollback(ctx context.Context) error { return t.finish(ctx, false) }

// pgxTx returns a pgx transaction to delegate to: inner, or host, made on
// the connection (one round trip, a SELECT 1) after a batched BEGIN.
func (t *deferredTx) pgxTx(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.open(ctx)
	if tx != nil || err != nil {
		return tx, err
	}
	if t.host == nil {
		h, err := t.conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: "SELECT 1"})
		if err != nil {
			return nil, err
		}
		t.host = h
	}
	return t.host, nil
}

// Begin starts a pseudo-nested transaction (a savepoint), as pgx's do.
func (t *deferredTx) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := t.pgxTx(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Begin(ctx)
}

func (t *deferredTx) LargeObjects() pgx.LargeObjects {
	tx, err := t.pgxTx(context.Background())
	if err != nil {
		// Only pgx's own transactions make a pgx.LargeObjects; the
		// connection failed, and the zero value is all there is.
		return pgx.LargeObjects{}
	}
	return tx.LargeObjects()
}

func (t *deferredTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return 0, err
	case tx != nil:
		return tx.CopyFrom(ctx, table, columns, src)
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t *deferredTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return failedBatch{err}
	case tx != nil:
		return tx.SendBatch(ctx, b)
	}
	return t.conn.SendBatch(ctx, b)
}

func (t *deferredTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return nil, err
	case tx != nil:
		return tx.Prepare(ctx, name, sql)
	}
	return t.conn.Prepare(ctx, name, sql)
}

func (t *deferredTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return pgconn.CommandTag{}, err
	case tx != nil:
		return tx.Exec(ctx, sql, args...)
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *deferredTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return nil, err
	case tx != nil:
		return tx.Query(ctx, sql, args...)
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *deferredTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	tx, err := t.open(ctx)
	switch {
	case err != nil:
		return errRow{err}
	case tx != nil:
		return tx.QueryRow(ctx, sql, args...)
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

// Conn returns the connection the transaction runs on.
func (t *deferredTx) Conn() *pgx.Conn { return t.conn }

// failedBatch is the pgx.BatchResults of a batch that could not be sent.
type failedBatch struct{ err error }

func (b failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b failedBatch) Query() (pgx.Rows, error)         { return errRows{err: b.err}, b.err }
func (b failedBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b failedBatch) Close() error                     { return b.err }
func (b failedBatch) Tx() pgx.Tx                       { return nil }
