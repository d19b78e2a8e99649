package consume

import (
	"context"
	"errors"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TxHandler handles a message whose effects are all writes through tx, a
// transaction of the ledger's database (*sql.Tx or pgx.Tx, by driver). It
// must leave tx open and write nothing through the pool tx came from (see
// [ledger.Mutate]); it returns what it produced, or an error to have its
// writes rolled back and the message delivered again.
type TxHandler[TTx any] func(ctx context.Context, tx TTx, msg Message) (Output, error)

// HandleTx runs fn at most once per message key inside a transaction of
// the ledger's database, and returns the Decision for the delivery (see
// the package doc, Rules). It begins the transaction, runs fn inside
// [ledger.MutateOutcomeCommit], so that fn's writes, its Output and the
// ledger's record share one savepoint, and commits; the Decision is Ack
// with fn's Output only once the commit succeeded. fn's error rolls everything back
// (Nack with the error, unchanged), and is counted on the message's record
// (see [Options.MaxAttempts]: the failure that spends the budget makes the
// Decision [DeadLetter], [ReasonMaxAttempts]); a failed commit rolls back too
// (Nack with the store's error, not counted). A panic of fn rolls back
// and goes on, not counted.
//
// A duplicate delivered while the first runs in another transaction waits
// for it (on the record's row on PostgreSQL, for the write lock on
// SQLite) and is then answered from its record; it is never run while the
// first may still commit. A key held by Handle's lease gets Nack, as in
// Handle. On SQLite, where BEGIN takes the database's write lock, a
// redelivery is answered from a plain read ([ledger.Ledger.Lookup]) before
// any transaction begins. A ctx that has ended gets Nack with no delay and
// ctx's error, and nothing begins; once begun, the transaction runs with
// ctx's values, not its cancellation. fn must not be nil.
func (c *Consumer[TTx]) HandleTx(ctx context.Context, msg Message, fn TxHandler[TTx]) Decision {
	dv, refused := c.prepare(msg)
	if refused != nil {
		return *refused
	}
	if err := ctx.Err(); err != nil {
		return nack(0, err) // shutting down: begin nothing
	}
	d := c.l.Driver()
	// A redelivery whose record stands is answered before BEGIN: from a
	// plain read where BEGIN takes the write lock (SQLite), else from the
	// ledger's cache alone (Recall), which costs no round trip.
	look := c.l.Lookup
	if !d.BeginLocks() {
		look = c.l.Recall
	}
	found, err := look(ctx, dv.req)
	switch {
	case err != nil:
		return c.refuse(ctx, dv, lifecycle.Refuse(ctx, err, lifecycle.Config{}))
	case found != nil:
		return c.replay(ctx, dv, found.Replay.Outcome)
	}
	tctx := context.WithoutCancel(ctx)
	tx, err := d.Begin(tctx)
	if err != nil {
		c.emit(ctx, dv, ledger.Event{Kind: lifecycle.FailureKind(err), Op: "claim", Err: err})
		return nack(c.opts.NackDelay, err)
	}
	defer d.Rollback(tctx, tx) // after a commit, a no-op

	var first Output
	ran, finished := false, false
	defer func() {
		if ran && !finished {
			c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic})
		}
	}()
	// MutateOutcomeCommit commits tx too: on pgxv5 the COMMIT then travels
	// with the stored outcome (and BEGIN with the claim), as in idemhttp's
	// TxHandler.
	res, err := ledger.MutateOutcomeCommit(tctx, c.l, tx, dv.req, func(ctx context.Context) (ledger.Outcome, error) {
		ran = true
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventClaimed})
		out, err := fn(ctx, tx, msg)
		if err != nil {
			return ledger.Outcome{}, &handlerError{err}
		}
		first = out
		return encodeOutcome(out, "")
	})
	finished = true
	var he *handlerError
	switch {
	case errors.As(err, &he):
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Err: he.err})
		return c.failed(ctx, tctx, dv, tx, he.err)
	case err != nil && ran:
		// fn ran, then storing its outcome or the commit failed: all of
		// it is rolled back.
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Err: err})
		return nack(c.opts.NackDelay, err)
	case err != nil:
		// The claim failed, or a replay's commit (a failure of the store,
		// as refuse reports it).
		return c.refuse(ctx, dv, lifecycle.Refuse(ctx, err, lifecycle.Config{}))
	}
	if res.Replayed {
		return c.replay(ctx, dv, res.Value)
	}
	c.emit(ctx, dv, ledger.Event{Kind: ledger.EventStored})
	return Decision{Action: Ack, Output: &first}
}

// failed answers a run of HandleTx whose handler returned herr: the
// rollback took the record's claim with it, so the failure is counted on
// the record in a claim and release of its own, on the pool, once tx has
// ended (on SQLite it holds the write lock). The failure that spends
// Options.MaxAttempts stores the message's end instead, and the Decision
// is DeadLetter (ReasonMaxAttempts); every other is Nack with herr. A
// claim that does not win (the message is in flight elsewhere, or was
// completed meanwhile) or a store that fails counts nothing.
func (c *Consumer[TTx]) failed(ctx, tctx context.Context, dv *delivery, tx TTx, herr error) Decision {
	if err := c.l.Driver().Rollback(tctx, tx); err != nil {
		return nack(c.opts.NackDelay, herr)
	}
	claim, err := c.l.Claim(tctx, dv.req)
	if err != nil || claim.Replayed() {
		return nack(c.opts.NackDelay, herr)
	}
	if n := claim.Failures + 1; n >= c.opts.MaxAttempts {
		cause := &AttemptsError{Attempts: n, Err: herr}
		c.giveUp(ctx, dv, claim, ReasonMaxAttempts, cause)
		return deadLetter(ReasonMaxAttempts, cause)
	}
	if err := c.l.Release(tctx, claim); err != nil {
		c.emit(ctx, dv, ledger.Event{Kind: lifecycle.FailureKind(err), Op: "release", Err: err})
	}
	return nack(c.opts.NackDelay, herr)
}

// handlerError carries fn's error out of MutateOutcome, so that it is told
// from the ledger's own.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }
