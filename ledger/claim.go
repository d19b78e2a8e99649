package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// Claim is the answer of a successful Ledger.Claim: either a lease on the
// key (Replay is nil), which the caller ends with Complete or Release, or
// the stored outcome of an earlier request (Replay is non-nil).
//
// A Claim is a value owned by the caller; Extend updates its
// LeaseExpiresAt, so it must not be used by several goroutines at once.
type Claim struct {
	Request Request
	// Token is the secret of the lease; empty for a replay.
	Token string
	// Fence grows by one at every takeover of the row (starting at 1), so
	// business code can store it beside its own writes and refuse a write
	// that carries a smaller fence than one already seen for the key. It is
	// monotonic while the row exists; Purge deletes only rows whose leases
	// are long gone, after which the next claim starts again at 1. For a
	// replay it is the stored record's fence.
	Fence int64
	// LeaseExpiresAt is when the lease runs out unless extended; zero for a
	// replay.
	LeaseExpiresAt time.Time
	// Replay is the completed record with the same key and fingerprint,
	// when there is one: answer with Replay.Outcome and do not run the
	// operation again. No lease is held then.
	Replay *Record
}

// Replayed reports whether the claim is a replay of a completed record.
func (c *Claim) Replayed() bool { return c.Replay != nil }

func (c *Claim) lease() driver.LeaseParams {
	return driver.LeaseParams{Scope: c.Request.Scope, Key: c.Request.Key, Token: c.Token, Fence: c.Fence}
}

// claimAttempts bounds the retries of a claim whose row changes between the
// upsert and the read that explains why the upsert lost.
const claimAttempts = 5

// Claim claims req's key with an atomic conditional write, attempted only
// when a plain read of the key's record shows none or one that may be
// taken over (see the package doc, Replays): on PostgreSQL one statement
// whose CTE reads the row and runs INSERT … ON CONFLICT DO UPDATE … WHERE …
// RETURNING only then; on SQLite a SELECT, then an INSERT … ON CONFLICT DO
// NOTHING for a key without a record or one conditional UPDATE … RETURNING
// for a record that may be taken over (each write decides and reports in
// one step, so a claim never writes without knowing it won; see
// queries/sqlite/ledger.sql for why SQLite splits it). It wins, and
// returns a Claim holding a fresh lease, when the key has no record, when
// the record has expired (anyone may take it over; see Record.Expired), or
// when the record is in flight with a lease that has run out and the same
// fingerprint (the earlier holder is presumed dead; the fence grows so that
// it cannot write any more). Otherwise it answers from the record it read
// (reading it again if a write lost a race), in this order of precedence:
//
//   - ErrKeyReused when the fingerprint differs;
//   - an *InFlightError (errors.Is(err, ErrInFlight)) when the record is in
//     flight under a live lease, with RetryAfter;
//   - a Claim whose Replay is the completed record.
//
// Claim runs on the driver's pool and commits at once: lease mode. Bad
// input returns an error wrapping ErrInvalidRequest before the database is
// used. If the row changes between the read and the write, the claim
// starts over; after a few such losses it returns an error matching
// ErrRetryable.
//
// If ctx ends while the claim runs, Claim returns an error wrapping ctx's
// error, and the driver cannot tell whether the write committed. Claim then
// ends the lease it may have taken, ignoring the cancellation (on SQLite
// this may wait for the write lock up to busy_timeout): the record stays in
// flight, as if its holder had vanished, and a retry with the same
// fingerprint takes it over at once instead of getting ErrInFlight until
// the lease runs out.
func (l *Ledger[TTx]) Claim(ctx context.Context, req Request) (*Claim, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.check(req); err != nil {
		return nil, err
	}
	return l.claim(ctx, l.db, req)
}

// claim is Claim on ex (the pool, or a transaction for Mutate) after the
// checks.
func (l *Ledger[TTx]) claim(ctx context.Context, ex driver.Executor, req Request) (*Claim, error) {
	return l.claimFirst(ctx, ex, req, ex.Claim)
}

// claimFirst is claim whose first attempt runs through first instead of
// ex.Claim (Mutate's sends its savepoint with it).
func (l *Ledger[TTx]) claimFirst(ctx context.Context, ex driver.Executor, req Request, first func(context.Context, driver.ClaimParams) (driver.ClaimResult, error)) (*Claim, error) {
	attempt := first
	for range claimAttempts {
		a := driver.ClaimParams{
			Scope: req.Scope, Key: req.Key, Fingerprint: req.Fingerprint[:],
			Token: newToken(), LeaseMillis: l.lease.Milliseconds(), TTLMillis: l.ttl.Milliseconds(),
			Now: l.clock(),
		}
		won, err := attempt(ctx, a)
		attempt = ex.Claim
		if err != nil {
			if ctx.Err() != nil {
				l.abandon(ctx, ex, a)
			}
			return nil, wrapOp("claim", classify(err))
		}
		if won.Won {
			return &Claim{Request: req, Token: a.Token, Fence: won.Fence, LeaseExpiresAt: fromMillis(won.LeaseExpiresAt)}, nil
		}
		row, now := won.Row, won.Now
		if row == nil {
			got, err := ex.Get(ctx, driver.GetParams{Scope: req.Scope, Key: req.Key, Now: l.clock()})
			if err != nil {
				return nil, wrapOp("claim", classify(err))
			}
			if got.Row == nil {
				continue // released or purged in between
			}
			row, now = got.Row, got.Now
		}
		r, err := record(row)
		if err != nil {
			return nil, wrapOp("claim", err)
		}
		c, err := standing(req, r, now)
		if c == nil && err == nil {
			continue // the row changed in between; the upsert would win now
		}
		return c, err
	}
	// Each attempt lost a race to a write that changed the record (a
	// takeover of an expired record, a release, a purge) between its read
	// and its own write: a later attempt of the caller's may win.
	return nil, wrapOp("claim", &retryableError{err: fmt.Errorf("the record kept changing during %d attempts", claimAttempts)})
}

// abandon cleans up after a claim cut short by the end of ctx. The driver
// then reports the context's error, but the write may have committed all
// the same (on a pool, where each statement commits by itself): a row in
// flight under a token nobody holds, which would answer every retry with
// ErrInFlight until the lease ran out. abandon ends that lease at once, if
// there is one, ignoring ctx's cancellation: the row stays, with its
// fence, and a retry with the same fingerprint takes it over. Should that
// fail too, the lease running out remains the remedy, as for any holder
// that vanished.
func (l *Ledger[TTx]) abandon(ctx context.Context, ex driver.Executor, a driver.ClaimParams) {
	_ = ex.Abandon(context.WithoutCancel(ctx), driver.LeaseParams{Scope: a.Scope, Key: a.Key, Token: a.Token})
}

// standing answers a claim of req against the key's record r, read at now
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
//   - replay: a completed record never changes until it expires (Complete,
//     Release and Extend need an in-flight row; takeover and Purge need an
//     expired one).
//
// now is never taken before the read, so r unexpired at now was unexpired
// at the read.
func standing(req Request, r *Record, now int64) (*Claim, error) {
	lease := r.LeaseExpiresAt.UnixMilli()
	if expired(r.State, r.ExpiresAt.UnixMilli(), lease, now) ||
		(r.State == StateInFlight && lease <= now && r.Fingerprint == req.Fingerprint) {
		return nil, nil
	}
	switch {
	case r.Fingerprint != req.Fingerprint:
		return nil, ErrKeyReused
	case r.State == StateInFlight:
		return nil, &InFlightError{RetryAfter: time.Duration(lease-now) * time.Millisecond}
	}
	return &Claim{Request: req, Fence: r.Fence, Replay: r}, nil
}

// newToken returns 128 random bits in hex: a lease token nobody can guess,
// so only the holder can complete, release or extend.
func newToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}
