package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// Claim is the answer of a successful [Ledger.Claim]: either a lease on the
// key (Replay is nil), which the caller ends with Complete or Release, or
// the stored outcome of an earlier request (Replay is non-nil).
//
// A Claim never changes once Claim returned it, so goroutines may share
// it: [Ledger.Extend] returns the lease's new end instead of writing it
// here, and [Claim.WithLease] makes the claim that carries it.
type Claim struct {
	Request Request
	// Token is the secret of the lease; empty for a replay.
	Token string
	// Fence grows by one at every takeover of the row (starting at 1), so
	// business code can store it beside its own writes and refuse a write
	// that carries a smaller fence than one already seen for the key. It
	// grows across releases too ([Ledger.Release] keeps the record, released,
	// with its fence), and as long as the record exists; Purge deletes only
	// records that have expired, and a released one no earlier than a lease
	// after the last lease on it ended, after which the next claim starts
	// again at 1. For a replay it is the stored record's fence.
	Fence int64
	// Failures counts the earlier runs of this operation that ended in
	// [Ledger.Release] (a failure a retry may repair), on the record this
	// claim took over: the same fingerprint, since the record was made or
	// last expired. A claim with another fingerprint, a new record and a
	// replay have 0. A consumer uses it to give up on a message that keeps
	// failing (a retry budget); a claim never refuses on it.
	Failures int
	// LeaseExpiresAt is when the lease runs out unless extended; zero for a
	// replay. The lease operations retry transient faults until then
	// (see [Ledger.Complete]).
	LeaseExpiresAt time.Time
	// CommittedAt is non-zero when the claim recovered ([Request.Recover]) a
	// record whose earlier holder passed its commit point at that time and
	// vanished: the operation's effect happened, so look it up rather than
	// make it again. [Ledger.Commit] does not set it: the claim's own mark
	// is in its record.
	CommittedAt time.Time
	// claimedAt is when the claim won (Unix milliseconds), the record's
	// created_at: with the fence and the fingerprint it tells this claim's
	// record from a later one after a purge.
	claimedAt int64
	// Replay is the completed record with the same key and fingerprint,
	// when there is one: answer with Replay.Outcome and do not run the
	// operation again. No lease is held then.
	Replay *Record
}

// Replayed reports whether the claim is a replay of a completed record.
func (c *Claim) Replayed() bool { return c.Replay != nil }

// WithLease returns a copy of c whose lease ends at until, the time
// [Ledger.Extend] returned: passed to Complete, Release or Commit, it lets
// their retries run to the extended end rather than the first one.
func (c *Claim) WithLease(until time.Time) *Claim {
	d := *c
	d.LeaseExpiresAt = until
	return &d
}

func (c *Claim) lease() driver.LeaseParams {
	return driver.LeaseParams{Scope: c.Request.Scope, Key: c.Request.Key, Token: c.Token, Fence: c.Fence}
}

// claimAttempts bounds the retries of a claim whose row changes between the
// upsert and the read that explains why the upsert lost.
const claimAttempts = 5

// Claim claims req's key with an atomic conditional write, attempted only
// when a plain read of the key's record shows none or one that may be
// taken over (see the package doc, Replays): on PostgreSQL one statement
// that reads the row and only then calls a function (schema migration 5)
// running INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING; on SQLite
// a SELECT, then an INSERT … ON CONFLICT DO NOTHING for a key without a
// record or one conditional UPDATE … RETURNING for a record that may be
// taken over (each write decides and reports in one step, so a claim never
// writes without knowing it won; see queries/sqlite/ledger.sql for why
// SQLite splits it). It wins, and returns a Claim holding a fresh lease,
// when the key has no record, when the record was released (any request
// may take it over: see [Ledger.Release]), when the record has expired
// (anyone may take it over; see [Record.Expired]), or when the record is in flight with a
// lease that has run out and the same fingerprint (the earlier holder is
// presumed dead; the fence grows so that it cannot write any more). Otherwise it answers from the record it read
// (reading it again if a write lost a race), in this order of precedence:
//
//   - ErrKeyReused when the fingerprint differs;
//   - a *CommittedError (errors.Is(err, ErrCommitted)) when the record is
//     in flight, passed its commit point, and its lease ran out, unless
//     req.Recover is set: then the claim takes it over like any other;
//   - an *InFlightError (errors.Is(err, ErrInFlight)) when the record is in
//     flight under a live lease, with RetryAfter;
//   - a Claim whose Replay is the completed record.
//
// A completed record that the ledger's cache holds answers the same way
// (a replay, or [ErrKeyReused]) without the database (see the package doc,
// The cache of completed outcomes).
//
// Claim runs on the driver's pool and commits at once: lease mode. It
// answers within [Options.ClaimTimeout] (at most a lease), or sooner when
// ctx ends: a claim held up longer (a lock, a silent connection) fails,
// matching [ErrBusy] when the store refused to wait longer (nothing was
// written) or [ErrOutcomeUnknown] when the statement was cut short. The
// claim's write carries that time as a bound, judged by the store's clock
// with [MaxClockSkew] allowed: a write that reaches the store later (held
// up on the network after this call gave up) wins nothing, so a request
// that gave up does not leave its key held for a lease that no one uses.
// Bad input returns an error wrapping [ErrInvalidRequest] before the
// database is used. If the row changes between the read and the write,
// the claim starts over; after a few such losses it returns an error
// matching ErrRetryable.
//
// If ctx ends while the claim runs, or the connection breaks after the
// statement may have reached the server (ErrOutcomeUnknown), Claim returns
// the error, and cannot tell whether the write committed. Claim then ends
// the lease it may have taken, ignoring the cancellation and retrying a
// connection fault for up to two seconds, or a lease if that is shorter
// (on SQLite this may wait for the
// write lock up to busy_timeout): the record stays in flight, as if its
// holder had vanished, and a retry with the same fingerprint takes it over
// at once instead of getting [ErrInFlight] until the lease runs out.
func (l *Ledger[TTx]) Claim(ctx context.Context, req Request) (*Claim, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.check(req); err != nil {
		return nil, err
	}
	return l.throughCache(ctx, req, "claim", func(st *stood) (*Claim, error) {
		return l.claimWith(ctx, l.db, req, l.db.Claim, st)
	})
}

// claimWith claims req on ex (the pool, or a transaction for Mutate) after
// the checks, its attempts running through attempt (ex.Claim, or Mutate's,
// which sets its savepoint with the first that needs one). When st is not
// nil, the completed row that answered, if one did, is noted in it.
func (l *Ledger[TTx]) claimWith(ctx context.Context, ex driver.Executor, req Request, attempt func(context.Context, driver.ClaimParams) (driver.ClaimResult, error), st *stood) (*Claim, error) {
	var (
		deadline time.Time
		// ahead is how far the store's clock was found to run ahead of
		// ours, past MaxClockSkew, by a claim it judged late.
		ahead   int64
		rebased bool
	)
	if ex == l.db {
		// Lease mode: the claim answers within ClaimTimeout (at most a
		// lease, like the lease's own statements: see persist), and its
		// write wins only if it reaches the store by then.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.claimTimeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	for range claimAttempts {
		a := driver.ClaimParams{
			Scope: req.Scope, Key: req.Key, Fingerprint: req.Fingerprint[:],
			Token: newToken(), LeaseMillis: l.lease.Milliseconds(), TTLMillis: l.ttl.Milliseconds(),
			Now: l.clock(), Recover: req.Recover,
		}
		if !deadline.IsZero() {
			a.ValidUntil = l.baseMillis(a.Now) + ahead + time.Until(deadline).Milliseconds() + MaxClockSkew.Milliseconds()
		}
		won, err := attempt(ctx, a)
		if err != nil {
			err = classify(deadlineFault(ctx, err))
			if ex == l.db && mayHaveRun(err) || ctx.Err() != nil {
				l.abandon(ctx, ex, a)
			}
			return nil, wrapOp("claim", err)
		}
		if won.Late {
			// Judged late while this request still waits for it: the
			// store's clock runs ahead of ours by more than
			// MaxClockSkew. Once, set the bound again from the store's
			// clock as it reported it.
			if rebased {
				return nil, wrapOp("claim", &retryableError{err: fmt.Errorf("the store's clock runs ahead of this process's by more than %v: every claim reaches it late", MaxClockSkew)})
			}
			rebased, ahead = true, max(0, won.Now-l.baseMillis(a.Now))
			continue
		}
		if won.Won {
			c := &Claim{Request: req, Token: a.Token, Fence: won.Fence, LeaseExpiresAt: fromMillis(won.LeaseExpiresAt),
				claimedAt: won.LeaseExpiresAt - a.LeaseMillis, Failures: int(won.Failures)}
			if won.CommittedAt != 0 {
				c.CommittedAt = fromMillis(won.CommittedAt)
			}
			return c, nil
		}
		row, now := won.Row, won.Now
		if row == nil {
			got, err := ex.Get(ctx, driver.GetParams{Scope: req.Scope, Key: req.Key, Now: l.clock()})
			if err != nil {
				return nil, wrapOp("claim", classify(err))
			}
			if got.Row == nil {
				continue // purged in between
			}
			row, now = got.Row, got.Now
		}
		c, err := standing(req, row, now)
		if c == nil && err == nil {
			continue // the row changed in between; the upsert would win now
		}
		if err != nil && !isAnswer(err) {
			return nil, wrapOp("claim", err)
		}
		st.note(row, now)
		return c, err
	}
	// Each attempt lost a race to a write that changed the record (a
	// takeover of an expired record, a release, a purge) between its read
	// and its own write: a later attempt of the caller's may win.
	return nil, wrapOp("claim", &retryableError{err: fmt.Errorf("the record kept changing during %d attempts", claimAttempts)})
}

// abandon cleans up after a claim whose write may have committed although
// its caller got an error: ctx ended while it ran, or the connection broke
// after the statement may have reached the server (the reply was lost). On
// a pool each statement commits by itself, so the write may stand: a row
// in flight under a token nobody holds, which would answer every retry
// with ErrInFlight until the lease ran out. abandon ends that lease at
// once, if there is one, ignoring ctx's cancellation: the row stays, with
// its fence, and a retry with the same fingerprint takes it over. A
// connection fault is retried for up to abandonBudget, on a fresh
// connection of the pool; should it last longer, the lease running out
// remains the remedy, as for any holder that vanished.
func (l *Ledger[TTx]) abandon(ctx context.Context, ex driver.Executor, a driver.ClaimParams) {
	p := driver.LeaseParams{Scope: a.Scope, Key: a.Key, Token: a.Token}
	_, _, _ = l.persist(context.WithoutCancel(ctx), time.Now().Add(min(abandonBudget, max(l.lease, persistMinBudget))), func(ctx context.Context) (bool, error) {
		return true, ex.Abandon(ctx, p)
	})
}

// baseMillis is the time a claim's bound counts from: now, the claim's
// own clock (Options.Now) when it has one, else this process's.
func (l *Ledger[TTx]) baseMillis(now int64) int64 {
	if now != 0 {
		return now
	}
	return time.Now().UnixMilli()
}

// abandonBudget bounds abandon's retries: it runs while the client waits
// for an answer, and idemhttp's Transport gives up after about 4 s.
const abandonBudget = 2 * time.Second

// mayHaveRun reports whether err, as classify returned it, leaves open
// that the statement committed. The errors that say it did not are the
// database's own refusals: a transaction rolled back (ErrRetryable,
// ErrBusy), a missing table.
func mayHaveRun(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown)
}

// standing answers a claim of req against the key's record row, read at now
// (Unix milliseconds, the engine's time at the read or after it), when r
// stands: ErrKeyReused, an *InFlightError, or a replay Claim, in Claim's
// order of precedence. It returns neither when r does not stand: a claim
// may take it over.
//
// Each answer is safe to give from a plain read, without the write or a
// lock, because what makes r stand cannot be undone by anyone but its
// holder before a time that now has not reached:
//
//   - key reused: r is unexpired, and a claim with another fingerprint can
//     only take r over once it has expired; until then r only changes by
//     its own holder (or a takeover with r's fingerprint), which keeps
//     the differing fingerprint, or by Release, after which the answer
//     was still true at the read;
//   - in flight: the lease is live, and only its holder (token and fence)
//     completes, releases or extends it before it runs out;
//   - committed: the lease ran out after its holder marked the commit
//     point; only a recovery (which this request did not ask for) or the
//     record's expiry ends that, and a late Complete of the holder's
//     after the read only turns the answer into a replay;
//   - replay: a completed record never changes until it expires (Complete,
//     Release and Extend need an in-flight row; takeover and Purge need an
//     expired one).
//
// now is never taken before the read, so r unexpired at now was unexpired
// at the read.
//
// It decides on the row as stored, times in Unix milliseconds, and decodes
// it into a Record (headers and all) only for a replay, the one answer
// that carries it; an error from that decoding is a stored row this
// ledger cannot read (not an answer: see isAnswer).
func standing(req Request, row *driver.Row, now int64) (*Claim, error) {
	if row.State == "released" {
		return nil, nil // any claim takes it over (Ledger.Release)
	}
	inFlight := row.State == "in_flight"
	sameFP := string(row.Fingerprint) == string(req.Fingerprint[:])
	state := StateCompleted
	if inFlight {
		state = StateInFlight
	}
	lease := row.LeaseExpiresAt
	if expired(state, row.ExpiresAt, lease, now) ||
		(inFlight && lease <= now && sameFP && (row.CommittedAt == 0 || req.Recover)) {
		return nil, nil
	}
	switch {
	case !sameFP:
		return nil, ErrKeyReused
	case inFlight && lease <= now:
		// Passed its commit point, then its holder vanished.
		return nil, &CommittedError{Fence: row.Fence, CommittedAt: fromMillis(row.CommittedAt)}
	case inFlight:
		return nil, &InFlightError{RetryAfter: time.Duration(lease-now) * time.Millisecond}
	}
	r, err := record(row)
	if err != nil {
		return nil, err
	}
	return &Claim{Request: req, Fence: r.Fence, Replay: r}, nil
}

// isAnswer reports whether err is one of standing's answers (ErrKeyReused,
// an *InFlightError, a *CommittedError), which Claim returns as they are,
// rather than a failure to read the row.
func isAnswer(err error) bool {
	return errors.Is(err, ErrKeyReused) || errors.Is(err, ErrInFlight) || errors.Is(err, ErrCommitted)
}

// newToken returns 128 random bits in hex: a lease token nobody can guess,
// so only the holder can complete, release or extend.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}
