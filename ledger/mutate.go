package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// Result is what Mutate returns.
type Result[T any] struct {
	// Value is fn's value on the first execution, or the stored value
	// decoded from JSON on a replay.
	Value T
	// Replayed reports that fn did not run: an earlier Mutate with the same
	// key and fingerprint had completed.
	Replayed bool
	// Fence is the claim's fence (see [Claim.Fence]).
	Fence int64
}

// savepoints numbers savepoint names across the process so that a Mutate
// nested in another Mutate (in the same transaction) never reuses the name
// of a savepoint that is still open.
var savepoints atomic.Uint64

// Mutate runs fn at most once per idempotency key, inside the caller's
// transaction tx, and returns fn's value; a retry with the same key and
// fingerprint gets the first value back (Replayed) without running fn.
// Business writes and the ledger row commit or vanish together. fn must
// write through tx, never through the pool (see the package doc, Mutate,
// for the whole contract: savepoints, fn's errors and panics, nesting,
// concurrent duplicates, isolation levels, and what tx allows a replay: on
// SQLite tx already holds the write lock, so answer retries first with
// [Ledger.Lookup] on the pool). TTx is inferred from l, so a call reads
// ledger.Mutate(ctx, l, tx, req, fn) on every driver.
//
// Errors: [ErrInvalidRequest] (wrapped) before tx is used; [ErrKeyReused];
// [ErrRetryable] (wrapped); *[InFlightError]; fn's error unchanged; an error
// wrapping [sql.ErrTxDone] when fn ended tx; database errors, wrapped with
// "ledger: mutate:". Whenever Mutate returns an error, nothing of it is
// left in tx, unless the error says "ledger: mutate: rollback:".
//
// A replay loses what encoding/json does not carry: unexported fields,
// fields tagged "-" and fields it drops as ambiguous (two with the same
// JSON name at the same depth), a [time.Time]'s location name and monotonic
// reading (its instant and UTC offset stay), and invalid UTF-8 in strings
// (each bad byte replays as U+FFFD). Compare the replay with the first
// value in a test when T is not plain data.
func Mutate[TTx, T any](ctx context.Context, l *Ledger[TTx], tx TTx, req Request, fn func(context.Context) (T, error)) (Result[T], error) {
	if err := checkMutate(ctx, l, tx, req, fn == nil); err != nil {
		return Result[T]{}, err
	}
	return mutate(ctx, l, l.d.TxExecutor(tx), req, fn, jsonCodec[T]{}, nil)
}

// MutateOutcome is [Mutate] for an operation whose result is an Outcome (an
// HTTP answer, typically), stored as it is, exactly as [Ledger.Complete]
// stores one: records of lease mode and of MutateOutcome are alike, so a key
// may move from one to the other (idemhttp's Middleware and TxHandler share
// their records). A replay returns the stored Outcome in [Result.Value].
func MutateOutcome[TTx any](ctx context.Context, l *Ledger[TTx], tx TTx, req Request, fn func(context.Context) (Outcome, error)) (Result[Outcome], error) {
	if err := checkMutate(ctx, l, tx, req, fn == nil); err != nil {
		return Result[Outcome]{}, err
	}
	return mutate(ctx, l, l.d.TxExecutor(tx), req, fn, outcomeCodec{}, nil)
}

// MutateOutcomeCommit is [MutateOutcome] followed by the commit of tx, for
// a caller that owns tx, began it for this call alone (no statement of its
// own ran in it), and has nothing to run in it afterwards (idemhttp's
// TxHandler). fn runs, and the record is stored, exactly as with
// MutateOutcome; then tx is committed, a replay's too. On pgxv5, in the
// query modes where it batches (see its package doc) and with tx from the
// driver's Begin, BEGIN travels with the claim and COMMIT with the stored
// outcome, so that a first execution costs the round trips of a plain
// transaction doing fn's writes, and a replay two.
//
// Errors: those of MutateOutcome, after which tx is still open and holds
// nothing of the call (the caller rolls it back); or, once the outcome is
// stored or the replay read, the commit's error, wrapped with "ledger:
// commit:", after which tx is over, rolled back by the database (its
// outcome unknown when the connection broke).
func MutateOutcomeCommit[TTx any](ctx context.Context, l *Ledger[TTx], tx TTx, req Request, fn func(context.Context) (Outcome, error)) (Result[Outcome], error) {
	if err := checkMutate(ctx, l, tx, req, fn == nil); err != nil {
		return Result[Outcome]{}, err
	}
	return mutate(ctx, l, l.d.TxExecutor(tx), req, fn, outcomeCodec{}, func(ctx context.Context) error {
		return l.d.Commit(ctx, tx)
	})
}

// commitError is the error of the commit that MutateOutcomeCommit makes
// after Mutate's work.
func commitError(err error) error { return fmt.Errorf("ledger: commit: %w", err) }

// checkMutate refuses the arguments of Mutate and MutateOutcome that
// cannot work, before tx is used.
func checkMutate[TTx any](ctx context.Context, l *Ledger[TTx], tx TTx, req Request, nilFn bool) error {
	switch {
	case ctx == nil:
		return invalidRequest("nil context")
	case l == nil:
		return invalidRequest("nil ledger")
	case l.d.IsNilTx(tx):
		return invalidRequest("nil transaction")
	case nilFn:
		return invalidRequest("nil function")
	}
	return l.check(req)
}

// codec turns a Mutate value into the Outcome stored for it, and a stored
// Outcome back into the value a replay returns.
type codec[T any] interface {
	encode(v T) (Outcome, error)
	decode(out Outcome) (T, error)
}

// jsonCodec is Mutate's: the value as JSON in the body, of KindValue.
type jsonCodec[T any] struct{}

func (jsonCodec[T]) encode(v T) (Outcome, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Outcome{}, fmt.Errorf("ledger: mutate: encode value: %w", err)
	}
	// A value that encodes but does not decode back into T (an interface
	// such as error, a MarshalJSON without its UnmarshalJSON) would be
	// stored, and every replay would fail until the record expires. Fail
	// the first call instead, which rolls it back.
	var back T
	if err := json.Unmarshal(body, &back); err != nil {
		return Outcome{}, fmt.Errorf("ledger: mutate: value of type %T does not decode from its own JSON: %w", v, err)
	}
	return Outcome{Kind: KindValue, Body: body}, nil
}

func (jsonCodec[T]) decode(out Outcome) (T, error) {
	var v T
	// A record without a kind was completed before schema version 3,
	// when Mutate's values were told by nothing but their status 0.
	if out.Kind != KindValue && (out.Kind != "" || out.Status != 0) {
		return v, fmt.Errorf("ledger: mutate: %w", &KindError{Kind: out.Kind, Want: KindValue})
	}
	if err := json.Unmarshal(out.Body, &v); err != nil {
		return v, fmt.Errorf("ledger: mutate: decode stored value: %w", err)
	}
	return v, nil
}

// outcomeCodec is MutateOutcome's: the Outcome as it is.
type outcomeCodec struct{}

func (outcomeCodec) encode(out Outcome) (Outcome, error) { return out, nil }
func (outcomeCodec) decode(out Outcome) (Outcome, error) { return out, nil }

// mutate is Mutate after its arguments were checked. commit, when not nil,
// commits the transaction at the end (MutateOutcomeCommit).
func mutate[TTx, T any](ctx context.Context, l *Ledger[TTx], tx driver.Executor, req Request, fn func(context.Context) (T, error), cd codec[T], commit func(context.Context) error) (Result[T], error) {
	var zero Result[T]
	sp := "idemledger_" + strconv.FormatUint(savepoints.Add(1), 10)
	// undo drops everything since the savepoint and pops it, leaving tx as
	// it was before Mutate. It runs on failures that may come from a
	// cancelled ctx, so it ignores the cancellation.
	undo := func(cause error) error {
		uctx := context.WithoutCancel(ctx)
		if err := tx.RollbackToSavepoint(uctx, sp); err != nil {
			return errors.Join(cause, fmt.Errorf("ledger: mutate: rollback: %w", err))
		}
		if err := tx.ReleaseSavepoint(uctx, sp); err != nil {
			return errors.Join(cause, fmt.Errorf("ledger: mutate: rollback: %w", err))
		}
		return cause
	}
	release := func() error {
		if err := tx.ReleaseSavepoint(context.WithoutCancel(ctx), sp); err != nil {
			return fmt.Errorf("ledger: mutate: %w", err)
		}
		return nil
	}

	// The savepoint travels with the first claim attempt when the driver
	// can batch them (driver.Batcher); a savepoint that fails stops the
	// claim, and there is nothing to undo. A Batcher may also answer a
	// record that stands from a read before it sets the savepoint: then
	// nothing was written, and nothing is left to undo or release.
	var (
		spErr error
		saved bool
	)
	// The cache answers a completed record before any statement (see
	// mutateCached); a replay read in tx is kept only once tx, the call's
	// own (commit), has committed: a caller's transaction may have
	// completed the record itself, and may still roll it back.
	var (
		st   *stood
		keep bool
	)
	if l.cache != nil {
		start := time.Now()
		mono, wall := l.cacheClock(start)
		if c, ok, err := l.recall(req, mono, wall); ok {
			l.observe(ctx, EventCacheHit, "mutate", start)
			return mutateCached(ctx, c, err, cd, commit)
		}
		st = &stood{}
		defer func() {
			if st.row == nil {
				return
			}
			l.observe(ctx, EventCacheMiss, "mutate", start)
			if keep {
				l.remember(req, st, mono, wall)
			}
		}()
	}
	c, err := l.claimWith(ctx, tx, req, func(ctx context.Context, a driver.ClaimParams) (driver.ClaimResult, error) {
		if saved {
			return tx.Claim(ctx, a)
		}
		res, ok, err := savepointClaim(ctx, tx, sp, a)
		saved = ok
		if !ok && err != nil {
			spErr = err
		}
		return res, err
	}, st)
	if spErr != nil {
		return zero, wrapOp("mutate", classify(spErr))
	}
	if err != nil {
		if !saved {
			return zero, err
		}
		return zero, undo(err)
	}
	if c.Replayed() {
		if commit != nil {
			// The COMMIT ends the savepoint, if one was set, with the
			// transaction, in which the claim wrote nothing.
			if err := commit(context.WithoutCancel(ctx)); err != nil {
				return zero, commitError(err)
			}
			keep = true
		} else if saved {
			if err := release(); err != nil {
				return zero, undo(err)
			}
		}
		v, err := cd.decode(c.Replay.Outcome)
		if err != nil {
			return zero, err
		}
		return Result[T]{Value: v, Replayed: true, Fence: c.Fence}, nil
	}
	if !saved {
		// A claim that won always set the savepoint first
		// (driver.Batcher); a driver that broke that rule wrote outside it.
		return zero, fmt.Errorf("ledger: mutate: the driver claimed the key without setting savepoint %s", sp)
	}

	v, err := runGuarded(ctx, fn, undo)
	if err != nil {
		return zero, undo(err)
	}
	out, err := cd.encode(v)
	if err != nil {
		return zero, undo(err)
	}
	p, err := l.completeParams(c, out)
	if err != nil {
		return zero, undo(err)
	}
	// The outcome travels with the RELEASE when the driver can batch them;
	// the RELEASE then runs only if the outcome was stored, so that a lost
	// lease still finds the savepoint open to undo.
	released, committed := false, false
	var res driver.CompleteResult
	wrote := time.Now()
	if b, ok := tx.(driver.Batcher); ok && commit != nil {
		res, released, committed, err = b.CompleteReleaseCommit(context.WithoutCancel(ctx), p, sp)
		if err != nil && released {
			// The COMMIT failed: the transaction is over, nothing to undo.
			return zero, commitError(err)
		}
		if err != nil && res.OK {
			return zero, undo(fmt.Errorf("ledger: mutate: %w", err))
		}
		err = completed(res.OK, err)
	} else if ok {
		res, released, err = b.CompleteRelease(context.WithoutCancel(ctx), p, sp)
		if err != nil && res.OK {
			// The RELEASE failed: undo below, as for release().
			return zero, undo(fmt.Errorf("ledger: mutate: %w", err))
		}
		err = completed(res.OK, err)
	} else {
		res, err = tx.Complete(context.WithoutCancel(ctx), p)
		err = completed(res.OK, err)
	}
	if err != nil {
		if errors.Is(err, sql.ErrTxDone) {
			err = fmt.Errorf("ledger: mutate: fn ended the transaction; it must leave tx open: %w", sql.ErrTxDone)
		}
		return zero, undo(err)
	}
	// A failed RELEASE leaves the savepoint open, with the claim, fn's
	// writes and the outcome inside: a caller who commits after the error
	// would commit them all. Undo, so that an error always means nothing
	// of this Mutate is left in tx.
	if !released {
		if err := release(); err != nil {
			return zero, undo(err)
		}
	}
	if commit != nil && !committed {
		if err := commit(context.WithoutCancel(ctx)); err != nil {
			return zero, commitError(err)
		}
	}
	if commit != nil {
		// Committed: the record is kept as written. A caller's
		// transaction may still roll it back, so nothing is kept then.
		l.keepCompleted(c, p, out.Header, res, wrote)
	}
	return Result[T]{Value: v, Fence: c.Fence}, nil
}

// mutateCached ends mutate with the cache's answer c or err (a replay, or
// ErrKeyReused), before any statement ran in tx: nothing to undo or
// release. commit, when not nil, still commits tx, as MutateOutcomeCommit
// promises for a replay (on pgxv5 a transaction whose BEGIN was deferred
// and never sent commits without a round trip).
func mutateCached[T any](ctx context.Context, c *Claim, err error, cd codec[T], commit func(context.Context) error) (Result[T], error) {
	var zero Result[T]
	if err != nil {
		return zero, err
	}
	if commit != nil {
		if err := commit(context.WithoutCancel(ctx)); err != nil {
			return zero, commitError(err)
		}
	}
	v, err := cd.decode(c.Replay.Outcome)
	if err != nil {
		return zero, err
	}
	return Result[T]{Value: v, Replayed: true, Fence: c.Fence}, nil
}

// savepointClaim sets savepoint sp in tx and makes claim attempt a, in one
// round trip when tx is a driver.Batcher. saved reports whether the
// savepoint was set; when it was not, nothing was written, and err is why
// (the SAVEPOINT's error), or nil when a Batcher answered the claim from a
// read of a record that stands (res.Row).
func savepointClaim(ctx context.Context, tx driver.Executor, sp string, a driver.ClaimParams) (res driver.ClaimResult, saved bool, err error) {
	if b, ok := tx.(driver.Batcher); ok {
		return b.SavepointClaim(ctx, sp, a)
	}
	if err := tx.Savepoint(ctx, sp); err != nil {
		return res, false, err
	}
	res, err = tx.Claim(ctx, a)
	return res, true, err
}

// runGuarded calls fn; if fn panics it undoes the savepoint first and then
// re-raises the panic, so the caller's transaction stays usable by whoever
// recovers.
func runGuarded[T any](ctx context.Context, fn func(context.Context) (T, error), undo func(error) error) (v T, err error) {
	panicking := true
	defer func() {
		if panicking {
			_ = undo(nil)
		}
	}()
	v, err = fn(ctx)
	panicking = false
	return v, err
}
