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
	var first Output
	ran, finished := false, false
	defer func() {
		if ran && !finished {
			c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic})
		}
	}()
	res := lifecycle.DecideTx(ctx, c.l, dv.req, func(ctx context.Context, tx TTx) (ledger.Outcome, error) {
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
	case res.Verdict == lifecycle.Refused:
		return c.refuse(ctx, dv, lifecycle.Decision{Verdict: res.Verdict, Refusal: res.Refusal, Event: res.Event})
	case res.Verdict == lifecycle.Replayed:
		return c.replay(ctx, dv, res.Outcome)
	case errors.As(res.Err, &he):
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Err: he.err})
		return c.failed(ctx, dv, he.err)
	case res.Err != nil:
		// fn ran, then storing its outcome or the commit failed: all of
		// it is rolled back.
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Err: res.Err})
		return nack(c.opts.NackDelay, res.Err)
	}
	c.emit(ctx, dv, ledger.Event{Kind: ledger.EventStored})
	return Decision{Action: Ack, Output: &first}
}

// failed answers a run of HandleTx whose handler returned herr: the
// rollback took the record's claim with it, so the failure is counted on
// the record in a claim and release of its own, on the pool (DecideTx
// ended the transaction first: on SQLite it holds the write lock). The failure that spends
// Options.MaxAttempts stores the message's end instead, and the Decision
// is DeadLetter (ReasonMaxAttempts); every other is Nack with herr. A
// claim that does not win (the message is in flight elsewhere, or was
// completed meanwhile) or a store that fails counts nothing.
func (c *Consumer[TTx]) failed(ctx context.Context, dv *delivery, herr error) Decision {
	tctx := context.WithoutCancel(ctx)
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
