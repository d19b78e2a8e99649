package ledger

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/idemledger/idemledger/driver"
)

// Complete stores out as the outcome of the claim c and ends its lease: the
// record replays out until TTL after now. It changes only the state, the
// outcome, the completion time and the expiry; the fingerprint stays as
// claimed.
//
// It succeeds only while c's lease still holds (same token and fence, still
// in flight) and returns ErrLeaseLost otherwise, so a worker whose lease
// was taken over cannot overwrite the new owner's outcome. A lease that ran
// out without being taken over still holds.
//
// The write ignores the cancellation of ctx (it keeps ctx's values): a
// client that hangs up must not turn the finished work into a retry that
// runs again. A nil c, or a header name in out that is not valid UTF-8,
// returns ErrInvalidRequest.
func (l *Ledger[TTx]) Complete(ctx context.Context, c *Claim, out Outcome) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	return l.complete(ctx, l.db, c, out)
}

// CompleteTx is Complete inside tx, a transaction of the ledger's database:
// the outcome commits, or vanishes, with the caller's own writes in tx. The
// lease stays held until tx commits; if tx rolls back, the claim is still
// in flight and may be completed or released again.
func (l *Ledger[TTx]) CompleteTx(ctx context.Context, tx TTx, c *Claim, out Outcome) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if l.d.IsNilTx(tx) {
		return invalidRequest("nil transaction")
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	return l.complete(ctx, l.d.TxExecutor(tx), c, out)
}

// complete is Complete on ex once c is checked.
func (l *Ledger[TTx]) complete(ctx context.Context, ex driver.Executor, c *Claim, out Outcome) error {
	p, err := l.completeParams(c, out)
	if err != nil {
		return err
	}
	return completed(ex.Complete(context.WithoutCancel(ctx), p))
}

// completeParams is the write that stores out for c.
func (l *Ledger[TTx]) completeParams(c *Claim, out Outcome) (driver.CompleteParams, error) {
	if err := checkOutcome(out); err != nil {
		return driver.CompleteParams{}, err
	}
	headers, err := headerJSON(out)
	if err != nil {
		return driver.CompleteParams{}, wrapOp("complete", err)
	}
	return driver.CompleteParams{
		LeaseParams: c.lease(), Status: int64(out.Status), Headers: headers, Body: out.Body,
		TTLMillis: l.ttl.Milliseconds(), Now: l.clock(),
	}, nil
}

// completed is Complete's answer from the driver's: ok reports whether the
// lease held.
func completed(ok bool, err error) error {
	if err != nil {
		return wrapOp("complete", classify(err))
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// Release deletes the in-flight record of claim c, after a failure that a
// retry may repair, so the next request with the key runs afresh. It never
// deletes a completed record and acts only while c's lease holds; otherwise
// it returns ErrLeaseLost. Like Complete it ignores the cancellation of
// ctx. A nil c returns ErrInvalidRequest.
func (l *Ledger[TTx]) Release(ctx context.Context, c *Claim) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	ok, err := l.db.Release(context.WithoutCancel(ctx), c.lease())
	if err != nil {
		return wrapOp("release", classify(err))
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// Extend pushes the lease of claim c to now plus the ledger's lease
// duration and updates c.LeaseExpiresAt: the heartbeat of long work. It
// acts only while c's lease holds (ErrLeaseLost otherwise). It does not move
// the record's ExpiresAt: an in-flight record expires only once both it and
// the lease have passed. A nil c returns ErrInvalidRequest.
func (l *Ledger[TTx]) Extend(ctx context.Context, c *Claim) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	until, ok, err := l.db.Extend(ctx, driver.ExtendParams{LeaseParams: c.lease(), LeaseMillis: l.lease.Milliseconds(), Now: l.clock()})
	if err != nil {
		return wrapOp("extend", classify(err))
	}
	if !ok {
		return ErrLeaseLost
	}
	c.LeaseExpiresAt = fromMillis(until)
	return nil
}

// checkOutcome refuses an outcome that the headers column cannot keep: a
// header name is a JSON object's name there, which is text, and a name
// that is not valid UTF-8 (never an HTTP field name, which is ASCII) would
// be stored with U+FFFD in it, where two such names could become one.
// Values are kept whatever their bytes (see headerJSON).
func checkOutcome(out Outcome) error {
	for name := range out.Header {
		if !utf8.ValidString(name) {
			return invalidRequest("header name %q is not valid UTF-8", name)
		}
	}
	return nil
}

// checkClaim refuses what cannot hold a lease before the database is used.
func checkClaim(c *Claim) error {
	switch {
	case c == nil:
		return invalidRequest("nil claim")
	case c.Replay != nil || c.Token == "":
		return fmt.Errorf("%w: the claim is a replay and holds no lease", ErrLeaseLost)
	}
	return nil
}
