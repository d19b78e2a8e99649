package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/retry"
)

// Complete stores out as the outcome of the claim c and ends its lease: the
// record replays out until TTL after now. It changes only the state, the
// outcome, the completion time and the expiry; the fingerprint stays as
// claimed.
//
// It succeeds only while c's lease still holds (same token and fence, still
// in flight) and returns [ErrLeaseLost] otherwise, so a worker whose lease
// was taken over cannot overwrite the new owner's outcome. A lease that ran
// out without being taken over still holds.
//
// The write ignores the cancellation of ctx (it keeps ctx's values): a
// client that hangs up must not turn the finished work into a retry that
// runs again. It answers by the end of c's lease (or a second from the
// call, for a lease that has nearly run out), whatever holds the
// statement up: a lock held longer gives [ErrBusy] (nothing written), a
// silent connection ErrOutcomeUnknown. A fault that leaves it unknown
// whether the write ran (a lost connection, [ErrOutcomeUnknown]) or a busy
// store is retried on a fresh connection until then (see the package doc,
// Faults); when an attempt whose outcome was unknown is followed by one
// that finds the lease gone, the record is read to tell a stored outcome
// (nil) from a lost lease. An outcome larger than the store can keep returns an
// *[OutcomeTooLargeError] ([ErrOutcomeTooLarge]) and stores nothing: the
// lease still holds, for a Complete with a smaller outcome. A nil c, or a
// header name in out that is not valid UTF-8, returns ErrInvalidRequest.
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

// complete is Complete on ex once c is checked. On the pool it retries
// transient faults within the lease (see persist); in a transaction it
// cannot, since a broken connection took the transaction with it.
func (l *Ledger[TTx]) complete(ctx context.Context, ex driver.Executor, c *Claim, out Outcome) error {
	return l.completeWith(ctx, ex, c, out, ex.Complete)
}

// completeWith is complete with store, ex's Complete or a statement like
// it.
func (l *Ledger[TTx]) completeWith(ctx context.Context, ex driver.Executor, c *Claim, out Outcome, store func(context.Context, driver.CompleteParams) (driver.CompleteResult, error)) error {
	p, err := l.completeParams(c, out)
	if err != nil {
		return err
	}
	if ex != l.db {
		// Not kept: tx may still roll the outcome back.
		res, err := store(context.WithoutCancel(ctx), p)
		return completed(res.OK, err)
	}
	start := time.Now()
	ctx, deadline := context.WithoutCancel(ctx), leaseDeadline(c)
	var res driver.CompleteResult
	ok, unsure, err := l.persist(ctx, deadline, func(ctx context.Context) (ok bool, err error) {
		res, err = store(ctx, p)
		return res.OK, err
	})
	if err != nil {
		return wrapOp("complete", err)
	}
	if ok {
		l.keepCompleted(c, p, out.Header, res, start)
	}
	if !ok && unsure {
		// An earlier attempt may have stored the outcome: the record is
		// then c's own (see Claim.same), completed. Complete clears the
		// token, so the fence, the fingerprint and the claim time tell.
		r, err := l.reread(ctx, deadline, c)
		if err != nil {
			return wrapOp("complete", err)
		}
		if r != nil && r.State == "completed" && c.same(r) {
			return nil
		}
	}
	return completed(ok, nil)
}

// persist runs op, a guarded statement of a held lease, again after each
// fault that another attempt may cure: a lost connection
// (ErrOutcomeUnknown: on a pool the next attempt gets a fresh connection)
// or a busy store (ErrBusy). The guard (token and fence) makes a second
// run harmless. It stops at op's first definite answer, or when ctx ends
// or deadline passes, returning the last fault. Every attempt runs under
// the deadline, the first one too: a statement that waits for a lock or a
// silent connection must not keep the caller past the lease, and a driver
// reads the deadline from the context to bound the engine's own waits
// (see the driver package doc, Deadlines). An attempt cut short by the
// deadline is an unknown outcome (the driver marks it so). unsure reports
// whether an attempt's outcome was unknown: a "false" after one may mean
// that attempt did the work.
func (l *Ledger[TTx]) persist(ctx context.Context, deadline time.Time, op func(context.Context) (bool, error)) (ok, unsure bool, err error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for attempt := 1; ; attempt++ {
		ok, err = op(ctx)
		if err == nil {
			return ok, unsure, nil
		}
		err = classify(deadlineFault(ctx, err))
		if !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrBusy) {
			return false, unsure, err
		}
		unsure = unsure || errors.Is(err, ErrOutcomeUnknown)
		if retry.Sleep(ctx, retry.Backoff(persistFirstWait, persistMaxWait, attempt)) != nil ||
			time.Until(deadline) < persistLastAttempt {
			return false, unsure, err
		}
	}
}

// persistLastAttempt is the least time left for which persist starts
// another attempt: one with less would be cut short by the deadline,
// turning a definite answer (busy) into an unknown one. An attempt's lock
// timeout leaves half the time left for the server's answer to come back
// (internal/pgerr), and on a loaded CI machine a 55P03 took more than the
// 50 ms that 100 ms left (TestLeaseStatementsAnswerWithinLease, a release).
const persistLastAttempt = 500 * time.Millisecond

// deadlineFault is err, the error of a statement run under ctx, marked
// driver.ErrOutcomeUnknown when ctx ended while it ran and the driver did
// not say what became of it: the statement may have reached the server,
// and may still run there.
func deadlineFault(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, driver.ErrOutcomeUnknown) || errors.Is(err, driver.ErrBusy) ||
		errors.Is(err, driver.ErrRetryable) || errors.Is(err, driver.ErrNotMigrated) {
		return err
	}
	return driver.Mark(err, driver.ErrOutcomeUnknown)
}

// The waits between persist's attempts: a dropped pooled connection is
// usually replaced at once, a restarting server takes seconds.
const (
	persistFirstWait = 20 * time.Millisecond
	persistMaxWait   = time.Second
)

// leaseDeadline is when c's lease operations must have answered, their
// statements and retries included: the end of its lease, or
// persistMinBudget from now if that is later. After it another request
// may take the key over and the guarded write would fail anyway; a record
// that passed its commit point is not taken over, but a store unreachable
// for a whole lease is an outage the caller must hear of.
func leaseDeadline(c *Claim) time.Time {
	end := c.LeaseExpiresAt
	if floor := time.Now().Add(persistMinBudget); end.Before(floor) {
		end = floor
	}
	return end
}

// persistMinBudget is the least time persist gets, for a lease that has
// (nearly) run out.
const persistMinBudget = time.Second

// reread reads c's record after an attempt whose outcome was unknown, on
// the pool, retrying transient faults like persist; nil when there is none.
func (l *Ledger[TTx]) reread(ctx context.Context, deadline time.Time, c *Claim) (*driver.Row, error) {
	var r *driver.Row
	_, _, err := l.persist(ctx, deadline, func(ctx context.Context) (bool, error) {
		got, err := l.db.Get(ctx, driver.GetParams{Scope: c.Request.Scope, Key: c.Request.Key, Now: l.clock()})
		r = got.Row
		return r != nil, err
	})
	return r, err
}

// same reports whether row is the record c claimed, and no other claim's
// that came after it: the fence alone starts again at 1 after a purge, so
// the fingerprint and the claim's time (created_at, set by every claim
// that wins; Release keeps it) must match too.
func (c *Claim) same(row *driver.Row) bool {
	return row.Fence == c.Fence && row.CreatedAt == c.claimedAt && string(row.Fingerprint) == string(c.Request.Fingerprint[:])
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
		LeaseParams: c.lease(), Kind: out.Kind, Status: int64(out.Status), Headers: headers, Body: out.Body,
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

// Release ends the in-flight claim c after a failure that a retry may
// repair, so that the next request with the key runs afresh, whatever its
// fingerprint, as if the key had no record. The record stays, released and
// invisible to Get, Find, InFlight and Lookup, for two things: its fence,
// which the next claim continues (see [Claim.Fence]), and its count of
// failed runs, which Release adds one to and the next claim with the same
// fingerprint reports ([Claim.Failures]). Purge leaves a released record
// until it expires, and not before a lease after c's lease would have run
// out.
//
// It never touches a completed record and acts only while c's lease holds;
// otherwise it returns ErrLeaseLost. It never releases a record that
// passed its commit point either ([Ledger.Commit]): it returns a
// *[CommittedError] then, and the outcome is to be stored with Complete.
// Like Complete it ignores the cancellation of ctx and retries transient
// faults within the lease, and a record found released by c after an
// attempt whose outcome was unknown counts as released. A nil c returns
// ErrInvalidRequest.
func (l *Ledger[TTx]) Release(ctx context.Context, c *Claim) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	ctx, deadline := context.WithoutCancel(ctx), leaseDeadline(c)
	p := driver.ReleaseParams{LeaseParams: c.lease(), LeaseMillis: l.lease.Milliseconds()}
	ok, unsure, err := l.persist(ctx, deadline, func(ctx context.Context) (bool, error) { return l.db.Release(ctx, p) })
	if err != nil {
		return wrapOp("release", err)
	}
	if ok {
		return nil
	}
	// Not released: a commit mark, a lost lease, or (after an attempt
	// whose outcome was unknown) a release that already happened. Only c's
	// holder releases the record at c's fence, and a later claim would
	// have changed the fence and the claim time.
	r, err := l.reread(ctx, deadline, c)
	switch {
	case err != nil:
		return wrapOp("release", err)
	case unsure && (r == nil || r.State == "released" && c.same(r)):
		return nil
	case r != nil && r.State == "in_flight" && r.LeaseToken == c.Token && c.same(r) && r.CommittedAt != 0:
		return wrapOp("release", &CommittedError{Fence: r.Fence, CommittedAt: fromMillis(r.CommittedAt)})
	}
	return ErrLeaseLost
}

// Commit marks the commit point of claim c in its record: the operation
// has made its irreversible effect (charged the card, sent the message),
// so running it again would repeat it. From then on the record is never
// handed to a takeover as if nothing had happened: should the holder
// vanish before Complete, retries get a *[CommittedError] ([ErrCommitted])
// once the lease runs out, or, with [Request.Recover], run again knowing it
// ([Claim.CommittedAt]); and Release refuses to delete it. Calling it again
// is harmless and keeps the first mark's time. It leaves c as it is.
//
// Like Complete it ignores the cancellation of ctx and retries transient
// faults, a lock it waited for included, until the lease runs out, or until
// ctx's deadline when that is later: the mark is written only while c's
// token is the record's, so one that lands late still proves that nobody
// took the key over, and a caller that waits that long behind a lock keeps
// its place ahead of a later claim (docs/guarantees.md, "A store that
// blocks past the lease"). The mark renews the lease for a whole lease, so
// that a retry finding it does not declare the answer lost while the
// holder stores it (c's LeaseExpiresAt does not move). It returns
// [ErrLeaseLost] when c's lease no longer holds, and otherwise an error
// when the mark could not be written: the record then stays an ordinary
// in-flight one, which a retry may take over once the lease runs out
// unless the holder stores an outcome first. A nil c returns
// ErrInvalidRequest.
func (l *Ledger[TTx]) Commit(ctx context.Context, c *Claim) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if err := checkClaim(c); err != nil {
		return err
	}
	deadline := leaseDeadline(c)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	ctx = context.WithoutCancel(ctx)
	p := driver.MarkParams{LeaseParams: c.lease(), LeaseMillis: l.lease.Milliseconds(), Now: l.clock()}
	// MarkCommitted is repeatable (a retry finds the lease still held and
	// keeps the mark), so an attempt whose outcome was unknown needs no
	// read to explain a later answer.
	ok, _, err := l.persist(ctx, deadline, func(ctx context.Context) (bool, error) { return l.db.MarkCommitted(ctx, p) })
	if err != nil {
		return wrapOp("commit", err)
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// Extend pushes the lease of claim c to now plus the ledger's lease
// duration, by the store's clock, and returns the lease's new end: the
// heartbeat of long work. It leaves c as it is; [Claim.WithLease] makes
// the claim that carries the new end. It acts only while c's lease holds
// ([ErrLeaseLost] otherwise). It does not move the record's ExpiresAt: an
// in-flight record expires only once both it and the lease have passed. A
// nil c returns ErrInvalidRequest.
func (l *Ledger[TTx]) Extend(ctx context.Context, c *Claim) (time.Time, error) {
	if err := l.checkCall(ctx); err != nil {
		return time.Time{}, err
	}
	if err := checkClaim(c); err != nil {
		return time.Time{}, err
	}
	// Extend is repeatable like MarkCommitted; its retries end with the
	// lease, past which extending it means nothing.
	p := driver.ExtendParams{LeaseParams: c.lease(), LeaseMillis: l.lease.Milliseconds(), Now: l.clock()}
	var until int64
	ok, _, err := l.persist(ctx, leaseDeadline(c), func(ctx context.Context) (ok bool, err error) {
		until, ok, err = l.db.Extend(ctx, p)
		return ok, err
	})
	if err != nil {
		return time.Time{}, wrapOp("extend", err)
	}
	if !ok {
		return time.Time{}, ErrLeaseLost
	}
	return fromMillis(until), nil
}

// checkOutcome refuses an outcome that the headers column cannot keep: a
// header name is a JSON object's name there, which is text, and a name
// that is not valid UTF-8 (never an HTTP field name, which is ASCII) would
// be stored with U+FFFD in it, where two such names could become one.
// Values are kept whatever their bytes (see headerJSON).
func checkOutcome(out Outcome) error {
	if len(out.Kind) > MaxKindLength {
		return invalidRequest("outcome kind is %d bytes, longer than %d", len(out.Kind), MaxKindLength)
	}
	for i := 0; i < len(out.Kind); i++ {
		if c := out.Kind[i]; c <= ' ' || c >= 0x7f {
			return invalidRequest("outcome kind %q holds byte %#02x at offset %d; want printable ASCII without spaces", out.Kind, c, i)
		}
	}
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
