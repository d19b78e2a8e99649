package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/ledger"
)

// Run is one request's won claim while its handler runs and until its end
// is stored. Commit and Committed may be called from any goroutine;
// Complete or Release ends the run, once, after the handler returned.
type Run struct {
	l Ledger
	// claim is the claim as won; it never changes. until is its lease's
	// end as last extended (Unix nanoseconds), which the heartbeat moves.
	claim *ledger.Claim
	until atomic.Int64
	emit  func(ledger.Event)
	// base carries the request context's values, not its cancellation.
	base      context.Context
	hb        *beat
	committed atomic.Bool
	// refused: Commit returned false, so the run's answer is not stored.
	refused  atomic.Bool
	markOnce sync.Once

	// mu guards what tells the handler that its lease is gone: the
	// cancellations of the contexts Context made, and the cause once
	// known.
	mu      sync.Mutex
	cancels []context.CancelCauseFunc
	cause   error
	// markHeld reports whether Commit wrote the mark into the record.
	markHeld bool

	steps steps
}

// Start begins the run of c, a claim that won (not a replay): it reports
// EventClaimed and starts the heartbeat. emit receives every event of the
// run; the integration fills in what it knows of the request.
func Start(ctx context.Context, l Ledger, c *ledger.Claim, emit func(ledger.Event)) *Run {
	return start(ctx, l, c, emit, time.Now())
}

// start is Start for a claim whose lease, as last confirmed, began at
// sent: the heartbeat counts the lease's end from there.
func start(ctx context.Context, l Ledger, c *ledger.Claim, emit func(ledger.Event), sent time.Time) *Run {
	r := &Run{l: l, claim: c, emit: emit, base: context.WithoutCancel(ctx)}
	r.until.Store(c.LeaseExpiresAt.UnixNano())
	emit(ledger.Event{Kind: ledger.EventClaimed})
	extend := func() error {
		ctx, cancel := r.detached()
		defer cancel()
		until, err := l.Extend(ctx, c)
		if err == nil {
			r.until.Store(until.UnixNano())
		}
		return err
	}
	failed := func(err error) { emit(ledger.Event{Kind: FailureKind(err), Op: "extend", Err: err}) }
	lost := func(err error) {
		if errors.Is(err, ErrLeaseExpired) {
			if r.committed.Load() && r.markWritten() {
				// The record passed its commit point: no retry takes it
				// over as if nothing had happened, so the handler goes on.
				return
			}
			emit(ledger.Event{Kind: ledger.EventLeaseLost, Op: "extend", Err: err})
		}
		r.lose(err)
	}
	r.hb = startBeat(l.Lease(), time.Since(sent), extend, failed, lost)
	return r
}

// Context returns a context for the handler of r's request: it carries
// ctx's values and r ([FromContext]), and is cancelled with ctx, when the
// run stops, or when the lease is lost, with a cause that matches
// [ledger.ErrLeaseLost] ([context.Cause]): a retry may be running the request
// again, so the handler must not begin its effect. The lease is taken as
// lost when an extension finds it taken over, when it runs out with no
// extension confirmed (the store unreachable, or locked, for a whole
// lease), and when Commit finds it gone; a run that wrote its commit mark
// is cancelled only for the first and the last.
func (r *Run) Context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.cause != nil {
		cancel(r.cause)
	} else {
		r.cancels = append(r.cancels, cancel)
	}
	r.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, r)
}

// lose cancels the handler's contexts with cause, once.
func (r *Run) lose(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cause != nil {
		return
	}
	r.cause = cause
	for _, cancel := range r.cancels {
		cancel(cause)
	}
	r.cancels = nil
}

// current is the run's claim with its lease's end as last extended, for
// the ledger's lease operations (the steps' too), whose retries run until
// then: the claim itself until an extension moves the end.
func (r *Run) current() *ledger.Claim {
	until := time.Unix(0, r.until.Load())
	if until.Equal(r.claim.LeaseExpiresAt) {
		return r.claim
	}
	return r.claim.WithLease(until)
}

// Lost returns why the lease is taken as lost (matching
// [ledger.ErrLeaseLost]), or nil while it is not.
func (r *Run) Lost() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cause
}

// markWritten reports whether Commit wrote the mark (false while the
// write is in progress).
func (r *Run) markWritten() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.markHeld
}

// Fence is the fence of the run's claim ([ledger.Claim].Fence): business
// code may store it beside its writes and refuse a smaller one.
func (r *Run) Fence() int64 { return r.claim.Fence }

// Failures is how many earlier runs of the operation failed and released
// the key ([ledger.Claim].Failures): a transport with a retry budget (a
// consumer's) gives up when it is spent.
func (r *Run) Failures() int { return r.claim.Failures }

// Key is the run's idempotency key, to forward to an outside service that
// takes idempotency keys too.
func (r *Run) Key() string { return r.claim.Request.Key }

// Recovered is when an earlier run of the request passed its commit point,
// for a run that recovers it ([ledger.Request.Recover]); zero otherwise.
func (r *Run) Recovered() time.Time { return r.claim.CommittedAt }

// Commit marks the commit point: from now on the run's end is stored
// whatever it is. The mark is written into the record once, before the
// first call returns (every call returns after that write).
//
// The effect is made by then, so a failure to write the mark is not the
// end of it: while nobody is known to have taken the key over, Commit
// tries again, for up to [CommitPatience] leases. A store that was locked
// or unreachable past the lease is then waited out: the mark's write is
// guarded by the lease's token, so once it lands no retry took the key
// over meanwhile, and Commit returns true. Each failed attempt is
// reported with Op "commit"; when the last one fails, the mark holds in
// this process only.
//
// It returns false when the lease is lost: known taken over before, found
// taken over by the mark's write, or run out with no mark written after
// the patience. The run's end will not be stored then.
func (r *Run) Commit(ctx context.Context) bool {
	r.committed.Store(true)
	r.markOnce.Do(func() {
		if err := r.Lost(); err != nil && !errors.Is(err, ErrLeaseExpired) {
			return
		}
		r.mark(ctx, time.Now().Add(CommitPatience*r.l.Lease()))
	})
	err := r.Lost()
	held := err == nil || (errors.Is(err, ErrLeaseExpired) && r.markWritten())
	if !held {
		r.refused.Store(true)
	}
	return held
}

// CommitPatience is how many leases [Run.Commit] goes on trying to write
// the commit mark through a store that fails, before it gives up.
const CommitPatience = 10

// mark writes the commit mark, trying again after failures that are not a
// takeover until giveUp (once, for a zero giveUp). Each try may wait for
// the store until giveUp: one that waits behind a lock keeps its place in
// the store's queue, ahead of a retry's claim that comes once the lease
// ran out (see [ledger.Ledger.Commit]).
func (r *Run) mark(ctx context.Context, giveUp time.Time) {
	if !giveUp.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), giveUp)
		defer cancel()
	}
	for {
		err := r.l.Commit(ctx, r.current())
		switch {
		case err == nil:
			r.mu.Lock()
			r.markHeld = true
			r.mu.Unlock()
			r.emit(ledger.Event{Kind: ledger.EventCommitted})
			return
		case errors.Is(err, ledger.ErrLeaseLost):
			r.emit(ledger.Event{Kind: ledger.EventLeaseLost, Op: "commit", Err: err})
			r.lose(err)
			return
		}
		r.emit(ledger.Event{Kind: FailureKind(err), Op: "commit", Err: err})
		if !time.Now().Before(giveUp) || errors.Is(err, ledger.ErrInvalidRequest) {
			return // out of patience, or a call no retry mends
		}
		// The ledger's Commit retried transient faults for at least a
		// second; a store that answers at once with an error (refused
		// connections) is not asked again in a loop without pause.
		time.Sleep(min(r.l.Lease()/10, time.Second))
	}
}

// Committed reports whether the handler passed its commit point.
func (r *Run) Committed() bool { return r.committed.Load() }

// Stop ends the heartbeat and cancels the handler's contexts (Context);
// the handler has returned (or panicked).
func (r *Run) Stop() {
	r.hb.Stop()
	r.mu.Lock()
	for _, cancel := range r.cancels {
		cancel(nil)
	}
	r.cancels = nil
	r.mu.Unlock()
}

// Complete stores out as the run's outcome, reporting EventStored with
// why (empty when out is the handler's answer as given) and status, or the
// failure with Op "complete". It ignores the request's cancellation. An
// answer the store refuses as too large ([ledger.ErrOutcomeTooLarge]) is
// replaced by a [KindNotStored] marker, reported stored with
// ReasonOversized: retries are told the answer is lost, never run again.
//
// An answer given after [Run.Commit] returned false is not stored: the
// handler was told that its lease is lost, so its answer is most likely a
// refusal, and a retry may be running the request. Nor is the key
// released, since Commit says the effect is made: when nobody is known to
// have taken the key over, the commit mark is tried once more, so that
// retries are told the answer is lost rather than run again.
// EventLeaseLost is reported with Op "complete".
func (r *Run) Complete(out ledger.Outcome, why ledger.Reason, status int, cause error) {
	r.hb.Stop()
	if r.refused.Load() {
		r.emit(withStatus(ledger.Event{Kind: ledger.EventLeaseLost, Op: "complete", Err: errAnsweredAfterLoss}, status))
		if errors.Is(r.Lost(), ErrLeaseExpired) {
			// Nobody is known to hold the key, and the effect is made: a
			// release would invite a second run. One more try at the
			// mark instead, for a store that is back by now.
			ctx, cancel := r.detached()
			defer cancel()
			r.mark(ctx, time.Time{})
		}
		return
	}
	ctx, cancel := r.detached()
	defer cancel()
	c := r.current()
	forgot, err := r.complete(ctx, c, out)
	if errors.Is(err, ledger.ErrOutcomeTooLarge) {
		// The lease still holds: keep a marker in its place, so that a
		// retry learns the answer is lost instead of running again.
		marker := ledger.Outcome{Kind: KindNotStored, Body: []byte(ledger.ReasonOversized)}
		if status != NoStatus {
			marker.Status = status
		}
		var merr error
		forgot, merr = r.complete(ctx, c, marker)
		if merr == nil {
			if !forgot {
				r.forgetSteps(ctx)
			}
			r.emit(withStatus(ledger.Event{Kind: ledger.EventStored, Reason: ledger.ReasonOversized, Err: err}, status))
			return
		}
		err = merr
	}
	if err != nil {
		r.emit(withStatus(ledger.Event{Kind: FailureKind(err), Op: "complete", Err: err}, status))
		return
	}
	if !forgot {
		r.forgetSteps(ctx)
	}
	r.emit(withStatus(ledger.Event{Kind: ledger.EventStored, Reason: why, Err: cause}, status))
}

// withStatus returns e carrying status, unless it is NoStatus.
func withStatus(e ledger.Event, status int) ledger.Event {
	if status != NoStatus {
		e.Status, e.HasStatus = status, true
	}
	return e
}

// errAnsweredAfterLoss is the Err of the event that reports an answer not
// stored because it came after Commit said the lease was lost.
var errAnsweredAfterLoss = fmt.Errorf("%w: the answer came after Commit reported it, and is not stored", ledger.ErrLeaseLost)

// NoStatus is the status of [Run.Release] when there is no answer (the
// handler panicked).
const NoStatus = -1

// Release gives the key back so that a retry runs again, reporting
// EventReleased with why and status ([NoStatus] when there is no answer),
// or the failure with Op "release".
func (r *Run) Release(why ledger.Reason, status int) {
	r.hb.Stop()
	ctx, cancel := r.detached()
	defer cancel()
	if err := r.l.Release(ctx, r.current()); err != nil {
		r.emit(withStatus(ledger.Event{Kind: FailureKind(err), Op: "release", Err: err}, status))
		return
	}
	r.emit(withStatus(ledger.Event{Kind: ledger.EventReleased, Reason: why}, status))
}

// detached returns a context that outlives the client's hang-up but not
// the lease: past it another request may own the key, and the ledger would
// refuse the write anyway.
func (r *Run) detached() (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.base, max(r.l.Lease(), time.Second))
}

// FailureKind returns the event of a failed ledger operation: lease lost,
// store busy (contention: [ledger.ErrRetryable] or [ledger.ErrBusy], or the
// driver's ErrRetryable from a transport's own BEGIN or COMMIT), outcome
// unknown (the connection broke), or store unavailable.
func FailureKind(err error) ledger.EventKind {
	switch {
	case errors.Is(err, ledger.ErrLeaseLost):
		return ledger.EventLeaseLost
	case errors.Is(err, ledger.ErrRetryable), errors.Is(err, ledger.ErrBusy), errors.Is(err, driver.ErrRetryable):
		return ledger.EventStoreBusy
	case errors.Is(err, ledger.ErrOutcomeUnknown):
		return ledger.EventOutcomeUnknown
	}
	return ledger.EventStoreUnavailable
}

// ctxKey is the context key of a run, for the integrations whose handlers
// reach it through their context (idemgrpc, idemconnect).
type ctxKey struct{}

// FromContext returns the run of the request whose context is ctx.
func FromContext(ctx context.Context) (*Run, bool) {
	r, ok := ctx.Value(ctxKey{}).(*Run)
	return r, ok
}
