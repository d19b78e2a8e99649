package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/idemledger/idemledger/internal/retry"
	"github.com/idemledger/idemledger/ledger"
)

// Ledger is what a lifecycle needs of a ledger: the lease-mode operations
// bound to their database. *[ledger.Ledger] has them all.
type Ledger interface {
	Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error)
	Complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) error
	Release(ctx context.Context, c *ledger.Claim) error
	Extend(ctx context.Context, c *ledger.Claim) (time.Time, error)
	Commit(ctx context.Context, c *ledger.Claim) error
	Lease() time.Duration
}

// Verdict is what becomes of a keyed request: see [Decide].
type Verdict uint8

// The verdicts.
const (
	// Claimed: the key is the request's; run the handler under
	// [Decision.Run] and end it with [Run.Complete] or [Run.Release].
	Claimed Verdict = iota + 1
	// Replayed: answer with [Decision.Outcome], the stored outcome of an
	// earlier request; the handler does not run.
	Replayed
	// Refused: answer with [Decision.Refusal]; the handler does not run.
	Refused
	// Unprotected: the store failed and [Config].FailOpen is set: the
	// handler runs without a claim, and nothing is stored.
	Unprotected
)

// Why says why a request is refused. A transport maps each to its own
// answer; the package doc's table has the HTTP ones.
type Why uint8

// The reasons of a refusal.
const (
	// InFlight: another request with the key runs, under a live lease;
	// come back after [Refusal.RetryAfter] (or wait: [Config].Wait).
	InFlight Why = iota + 1
	// KeyReused: the key's record was made by a request with another
	// fingerprint ([ledger.ErrKeyReused]); final for the record's TTL.
	KeyReused
	// NotStored: the operation completed but its answer was not kept (an
	// answer too large to store, or a run that passed its commit point and
	// vanished without recording a step: one that recorded steps is
	// resumed instead, see [Run.Step]); final: every later request with
	// the key gets the same until the record expires.
	NotStored
	// Invalid: the ledger refused the request's key or scope
	// ([ledger.ErrInvalidRequest]); nothing was stored.
	Invalid
	// Busy: the store works but lost to contention (a lock not free in
	// time); a retry after [Refusal.RetryAfter] may succeed.
	Busy
	// Unavailable: the store failed (unreachable, not migrated, timed
	// out); [Refusal.Err] says how.
	Unavailable
	// Canceled: the request's own context ended while its claim ran; the
	// client has left, and nobody reads the answer.
	Canceled
)

var whyNames = [...]string{
	InFlight: "in_flight", KeyReused: "key_reused", NotStored: "not_stored", Invalid: "invalid",
	Busy: "busy", Unavailable: "unavailable", Canceled: "canceled",
}

// String returns the reason in snake_case ("in_flight", "not_stored").
func (w Why) String() string {
	if int(w) < len(whyNames) && whyNames[w] != "" {
		return whyNames[w]
	}
	return "unknown"
}

// Refusal is why a request does not run, as [Decide] found it.
type Refusal struct {
	Why Why
	// RetryAfter is how long the client should wait before it retries,
	// for [InFlight] (the rest of the first run's lease) and Busy; zero
	// otherwise.
	RetryAfter time.Duration
	// Status is the status of the answer that was not kept, for a
	// [NotStored] refusal whose run stored one with its marker; 0 otherwise.
	Status int
	// First reports, for [NotStored], that this request is the first told:
	// its Decide settled the record (a run past its commit point that
	// vanished). A transport that must act once per operation (a consumer's
	// dead letter) acts on the first only.
	First bool
	// Reason says why the answer was not kept, for [NotStored]:
	// [ledger.ReasonOversized] for an answer the store could not keep,
	// empty for a run that passed its commit point and vanished.
	Reason ledger.Reason
	// Err is the ledger's error behind the refusal, as returned by
	// [ledger.Ledger.Claim]: it may quote the key and the scope, so a
	// transport that reports it must redact it ([Redact]).
	Err error
}

// Decision is the answer of [Decide] for one request.
type Decision struct {
	Verdict Verdict
	// Outcome is the stored outcome, for Replayed. It is the caller's own:
	// decoded for this request alone.
	Outcome ledger.Outcome
	// Run is the run that holds the claim, for Claimed.
	Run *Run
	// Refusal says why, for Refused.
	Refusal Refusal
	// Event is the event to report for Replayed, Refused and Unprotected,
	// with Kind zero when there is none (an Invalid refusal is made before
	// any record). The transport fills in its status, route and duration
	// and reports it; a Claimed run reports its own events through
	// [Config].Emit.
	Event ledger.Event
}

// Config is how [Decide] treats a request. The zero value refuses a
// duplicate at once, fails closed, and reports no events.
type Config struct {
	// Wait is how long a request whose key is in flight waits for the
	// first run's outcome before it is refused with [InFlight]: it polls
	// the record, and is answered the moment the first run stores its
	// outcome (Replayed), releases the key (Claimed: it runs itself), or
	// loses its lease. Zero or negative: refused at once.
	Wait time.Duration
	// FailOpen makes a store failure (Unavailable) the verdict
	// Unprotected, except for a missing table ([ledger.ErrNotMigrated]),
	// a deployment error that would otherwise leave every request
	// unprotected until someone noticed.
	FailOpen bool
	// Emit receives the events of a Claimed run (see [Start]); nil means
	// none.
	Emit func(ledger.Event)
}

// Decide claims req's key with l and says what becomes of the request:
// run it (Claimed, with the [Run] that holds the lease), answer it with the
// stored outcome (Replayed), refuse it (Refused, with why), or, with
// [Config.FailOpen] while the store fails, run it unprotected. It is the one
// place where a transport's request meets the ledger: a transport maps
// the verdict to its wire and does nothing else with the ledger's errors.
//
// Every answer it gives is true when given. In particular a [NotStored]
// refusal is final: a run that passed its commit point and then lost its
// lease is fenced out before the answer is given (its record is taken over
// and completed with a marker, [KindNotStored]), so the first run can no
// longer store another answer after a retry was told the answer is gone.
// Should that takeover not settle (the store fails, or the first run
// completes first), the answer is whatever the record then says.
//
// A run that recorded steps ([Run.Step], [StepTx]) is never answered
// NotStored: the request that takes its record over is Claimed instead,
// with [Run.Recovered] set, and its handler resumes, the recorded steps
// returning their results without running again.
func Decide(ctx context.Context, l Ledger, req ledger.Request, cfg Config) Decision {
	var waitUntil time.Time
	for attempt := 1; ; attempt++ {
		sent := time.Now()
		c, err := l.Claim(ctx, req)
		if err == nil {
			return decided(ctx, l, c, cfg, sent)
		}
		var inFlight *ledger.InFlightError
		if cfg.Wait > 0 && errors.As(err, &inFlight) && ctx.Err() == nil {
			if waitUntil.IsZero() {
				waitUntil = time.Now().Add(cfg.Wait)
			}
			left := time.Until(waitUntil)
			if left > 0 {
				pause := min(retry.Backoff(waitFirstPoll, waitMaxPoll, attempt), left, max(inFlight.RetryAfter, time.Millisecond))
				if retry.Sleep(ctx, pause) == nil {
					continue
				}
			}
		}
		if errors.Is(err, ledger.ErrCommitted) && !req.Recover {
			return settle(ctx, l, req, cfg)
		}
		return Refuse(ctx, err, cfg)
	}
}

// The waits between the polls of a waiting duplicate: short at first,
// since most handlers answer in milliseconds, then about ten times a
// second per waiting request.
const (
	waitFirstPoll = 5 * time.Millisecond
	waitMaxPoll   = 100 * time.Millisecond
)

// decided is the verdict of a claim that Claim, called at sent, answered
// without error.
func decided(ctx context.Context, l Ledger, c *ledger.Claim, cfg Config, sent time.Time) Decision {
	if !c.Replayed() {
		if time.Since(sent) > l.Lease()/4 {
			// The claim waited (behind a lock on the record, a slow store)
			// for much of a lease that the store counts from when the
			// statement began: a retry could take the key over moments
			// after the handler starts. Renew the lease first, so that the
			// handler starts with a whole one and the heartbeat counts
			// from the renewal.
			sent = time.Now()
			until, err := l.Extend(context.WithoutCancel(ctx), c)
			if err != nil {
				if errors.Is(err, ledger.ErrLeaseLost) {
					err = &ledger.InFlightError{RetryAfter: time.Second}
				}
				return Refuse(ctx, err, cfg)
			}
			c = c.WithLease(until)
		}
		return Decision{Verdict: Claimed, Run: start(ctx, l, c, cfg.emit(), sent)}
	}
	if out := c.Replay.Outcome; out.Kind == KindNotStored {
		ref := Refusal{Why: NotStored, Status: out.Status, Reason: ledger.Reason(out.Body)}
		return Decision{Verdict: Refused, Refusal: ref, Event: ledger.Event{Kind: ledger.EventReplayed}}
	}
	return Decision{Verdict: Replayed, Outcome: c.Replay.Outcome, Event: ledger.Event{Kind: ledger.EventReplayed}}
}

// KindNotStored is the kind of the marker stored when the operation
// completed but its answer is not kept: by [Decide] for a run that passed
// its commit point and vanished (Body empty, Status 0), and by
// [Run.Complete] for an answer the store refused as too large (Body
// "oversized", Status the answer's). Decide answers it with a [NotStored]
// refusal; a transport never sees it as an Outcome.
const KindNotStored = "not_stored"

// settle answers a request whose record passed its commit point and whose
// holder's lease ran out: it takes the record over (which fences the old
// holder out: its Complete now fails) and stores the NotStored marker, so
// that the answer "completed, answer not kept" is final. If the record
// changed meanwhile, the answer is what it says now: a replay of an answer
// the holder stored in time, or a claim of a record released or expired.
func settle(ctx context.Context, l Ledger, req ledger.Request, cfg Config) Decision {
	req.Recover = true
	sent := time.Now()
	c, err := l.Claim(ctx, req)
	if err != nil {
		if errors.Is(err, ledger.ErrCommitted) {
			// Cannot be with Recover set; never answer "gone" on a guess.
			err = &ledger.InFlightError{RetryAfter: time.Second}
		}
		return Refuse(ctx, err, cfg)
	}
	if c.Replayed() || c.CommittedAt.IsZero() {
		return decided(ctx, l, c, cfg, sent)
	}
	// The run recorded steps: the operation can be finished, not just
	// declared gone. This request runs it, resuming after them.
	if resume, err := resumable(ctx, l, req); err != nil {
		// The claim stays in flight until its lease runs out; a later
		// request settles it. Not "gone" on a guess.
		return Refuse(ctx, err, cfg)
	} else if resume {
		return decided(ctx, l, c, cfg, sent)
	}
	if err := l.Complete(context.WithoutCancel(ctx), c, ledger.Outcome{Kind: KindNotStored}); err != nil {
		// The marker did not land: the record stays in flight under this
		// claim's lease, and a later request settles it. Not "gone" yet.
		if errors.Is(err, ledger.ErrLeaseLost) {
			err = &ledger.InFlightError{RetryAfter: time.Second}
		}
		return Refuse(ctx, err, cfg)
	}
	return Decision{Verdict: Refused, Refusal: Refusal{Why: NotStored, First: true}, Event: ledger.Event{Kind: ledger.EventReplayed}}
}

// Refuse is the verdict on err, an error of [ledger.Ledger.Claim] or of
// [ledger.Mutate] and its kin: Refused with why, or Unprotected for a
// store failure under cfg.FailOpen. Only cfg.FailOpen is read. Decide uses
// it; a transport in transaction mode, whose claim runs inside Mutate,
// calls it on Mutate's error. A ctx that ended makes a store failure
// Canceled.
func Refuse(ctx context.Context, err error, cfg Config) Decision {
	var inFlight *ledger.InFlightError
	switch {
	case errors.As(err, &inFlight):
		return refusal(InFlight, max(inFlight.RetryAfter, time.Millisecond), err, ledger.Event{Kind: ledger.EventInFlight})
	case errors.Is(err, ledger.ErrKeyReused):
		return refusal(KeyReused, 0, err, ledger.Event{Kind: ledger.EventKeyReused})
	case errors.Is(err, ledger.ErrCommitted):
		// Only with Request.Recover unset and settle not run: a record
		// that another request is settling.
		return refusal(InFlight, time.Second, err, ledger.Event{Kind: ledger.EventInFlight})
	case errors.Is(err, ledger.ErrInvalidRequest):
		return refusal(Invalid, 0, err, ledger.Event{})
	case ctx.Err() != nil:
		// The client left, or its deadline passed, while the claim ran:
		// the store did not answer in time, which is still worth a report.
		return refusal(Canceled, 0, err, ledger.Event{Kind: FailureKind(err), Op: "claim", Err: err})
	}
	kind := FailureKind(err)
	if kind == ledger.EventStoreBusy {
		return refusal(Busy, time.Second, err, ledger.Event{Kind: kind, Op: "claim", Err: err})
	}
	if cfg.FailOpen && !errors.Is(err, ledger.ErrNotMigrated) {
		return Decision{Verdict: Unprotected, Refusal: Refusal{Why: Unavailable, Err: err}, Event: ledger.Event{Kind: kind, Op: "claim", Err: err}}
	}
	return refusal(Unavailable, 0, err, ledger.Event{Kind: kind, Op: "claim", Err: err})
}

func refusal(why Why, after time.Duration, err error, e ledger.Event) Decision {
	return Decision{Verdict: Refused, Refusal: Refusal{Why: why, RetryAfter: after, Err: err}, Event: e}
}

// emit is Emit, or a function that drops every event.
func (cfg Config) emit() func(ledger.Event) {
	if cfg.Emit != nil {
		return cfg.Emit
	}
	return func(ledger.Event) {}
}
