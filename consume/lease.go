package consume

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// Handler handles a message in lease mode. Its effects may be anywhere
// (another service, a mailer); it returns what it produced, or an error to
// have the message delivered again. ctx carries the run: call [Commit]
// with it right after an effect that must not be made twice.
type Handler func(ctx context.Context, msg Message) (Output, error)

// Handle runs fn at most once per message key in lease mode and returns
// the Decision for the delivery (see the package doc, Rules). It claims
// the key ([ledger.Ledger.Claim]), extends the lease while fn runs, and then:
//
//   - fn returned no error: its Output is stored, and the Decision is Ack
//     with it. Should storing fail, the Decision is still Ack (the effect
//     was made; a redelivery would repeat it) and an event reports the
//     failure;
//   - fn returned an error before its commit point: the key is released,
//     the failure counted on its record, and the Decision is Nack with
//     fn's error; when that failure spends Options.MaxAttempts, the
//     Decision is DeadLetter (ReasonMaxAttempts) instead, stored, and
//     every later copy of the message is acknowledged;
//   - fn returned an error after Commit: the failure is stored and the
//     Decision is DeadLetter (ReasonFailed); later copies are acknowledged;
//   - fn panicked: as for an error, then the panic goes on (an adapter
//     that recovers panics then nacks the message).
//
// A delivery whose key is held by a live run elsewhere gets Nack with the
// rest of that run's lease (at most [Options.NackDelay]) as Delay: the
// message is never handled twice at once. A delivery of a completed key
// gets the stored Output (Replayed) without running fn. ctx's values
// reach fn; its cancellation stops the claim (Nack with no delay and the
// claim's error), not the storing of fn's outcome. fn must not be nil.
func (c *Consumer[TTx]) Handle(ctx context.Context, msg Message, fn Handler) Decision {
	dv, refused := c.prepare(msg)
	if refused != nil {
		return *refused
	}
	d := lifecycle.Decide(ctx, c.l, dv.req, lifecycle.Config{Emit: func(e ledger.Event) { c.emit(ctx, dv, e) }})
	switch d.Verdict {
	case lifecycle.Replayed:
		return c.replay(ctx, dv, d.Outcome)
	case lifecycle.Refused, lifecycle.Unprotected:
		return c.refuse(ctx, dv, d)
	}
	run := d.Run
	if f := run.Failures(); f >= c.opts.MaxAttempts {
		// The budget was spent by runs that could not give up themselves
		// (a panic): the message goes to the dead-letter path unrun.
		run.Stop()
		cause := &AttemptsError{Attempts: f}
		if stored, err := deadLetterOutcome(ReasonMaxAttempts, cause); err == nil {
			run.Complete(stored, ledger.ReasonError, lifecycle.NoStatus, cause)
		}
		return deadLetter(ReasonMaxAttempts, cause)
	}
	finished := false
	defer func() {
		if finished {
			return
		}
		// fn panicked: before its commit point the key goes back, after it
		// the failure is kept. The panic goes on.
		if run.Committed() {
			out, _ := encodeOutcome(Output{}, "consume: the handler panicked after its commit point")
			run.Complete(out, ledger.ReasonPanic, lifecycle.NoStatus, nil)
			return
		}
		run.Release(ledger.ReasonPanic, lifecycle.NoStatus)
	}()
	out, herr := fn(run.Context(ctx), msg)
	finished = true
	run.Stop()
	switch {
	case herr != nil && run.Committed():
		stored, err := deadLetterOutcome(ReasonFailed, herr)
		if err == nil {
			run.Complete(stored, ledger.ReasonError, lifecycle.NoStatus, herr)
		}
		return deadLetter(ReasonFailed, &FailedError{Message: herr.Error(), Err: herr})
	case herr != nil && run.Lost() == nil && run.Failures()+1 >= c.opts.MaxAttempts:
		// The last run of the budget: its failure is stored as the
		// message's end, and later copies are acknowledged.
		cause := &AttemptsError{Attempts: run.Failures() + 1, Err: herr}
		if stored, err := deadLetterOutcome(ReasonMaxAttempts, cause); err == nil {
			run.Complete(stored, ledger.ReasonError, lifecycle.NoStatus, herr)
		}
		return deadLetter(ReasonMaxAttempts, cause)
	case herr != nil:
		// Release counts the failure on the record (Claim.Failures).
		run.Release(ledger.ReasonError, lifecycle.NoStatus)
		return nack(c.opts.NackDelay, herr)
	}
	stored, err := encodeOutcome(out, "")
	if err != nil {
		// Output always encodes: its fields are strings and bytes.
		run.Release(ledger.ReasonError, lifecycle.NoStatus)
		return nack(c.opts.NackDelay, err)
	}
	run.Complete(stored, "", lifecycle.NoStatus, nil)
	return Decision{Action: Ack, Output: &out}
}

// Commit marks the commit point of the message being handled with ctx
// (a Handler's context): its effect was made, so from now on a failure of
// the handler is stored and the message is sent to the dead-letter path
// instead of being run again, and a panic likewise. The mark is written
// into the record before Commit returns ([ledger.Ledger.Commit]): should the
// process die before the outcome is stored, a redelivery after the lease
// gets [DeadLetter] ([ReasonOutcomeNotStored]), or with [Options.Recover] runs
// again knowing it (Recovered). A store that fails or blocks meanwhile is
// waited out, for as long as [lifecycle.Run.Commit] says.
//
// It reports whether ctx belongs to a run of Handle (HandleTx has no
// commit point: the transaction is one). Calling it again is harmless. It
// is safe to call from any goroutine.
//
// It returns false when the lease is lost: the handler's context is then
// cancelled with a cause matching [ledger.ErrLeaseLost], the answer will
// not be stored, and a retry may run again.
func Commit(ctx context.Context) bool {
	r, ok := lifecycle.FromContext(ctx)
	return ok && r.Commit(ctx)
}

// Recovered reports, inside a Handler, when an earlier run of the same
// message passed its commit point and vanished before storing its
// outcome, and true, when this run recovers it ([Options.Recover]): the
// effect was made, so look it up rather than make it again.
func Recovered(ctx context.Context) (time.Time, bool) {
	r, ok := lifecycle.FromContext(ctx)
	if !ok || r.Recovered().IsZero() {
		return time.Time{}, false
	}
	return r.Recovered(), true
}
