package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// Result is what Mutate returns.
type Result[T any] struct {
	// Value is fn's value on the first execution, or the stored value
	// decoded from JSON on a replay.
	Value T
	// Replayed reports that fn did not run: an earlier Mutate with the same
	// key and fingerprint had completed.
	Replayed bool
	// Fence is the claim's fence (see Claim.Fence).
	Fence int64
}

// savepoints numbers savepoint names across the process so that a Mutate
// nested in another Mutate (in the same transaction) never reuses the name
// of a savepoint that is still open.
var savepoints atomic.Uint64

// Mutate runs fn at most once per idempotency key, inside the caller's
// transaction tx, and returns fn's value; a retry with the same key and
// fingerprint gets the first value back (Replayed) without running fn.
//
// Business writes and the ledger row commit or vanish together: Mutate
// sets a SAVEPOINT in tx, claims req, runs fn, stores fn's value as JSON
// and releases the savepoint, all in tx. Nothing is durable until the
// caller commits tx; if the caller rolls tx back, the claim goes with fn's
// writes and a retry runs fn again.
//
// fn must do its writes through tx, never through the pool tx came from:
// the ledger row is in tx, and with SQLite a second connection waits for
// tx's write lock, so a pool of one connection deadlocks and a larger one
// times out with SQLITE_BUSY. fn must not commit or roll back tx either:
// Mutate then returns an error wrapping sql.ErrTxDone, and a commit by fn
// has already made the claim durable without its outcome, so retries get
// an *InFlightError until the lease runs out and then run fn again.
//
// If fn returns an error or panics, Mutate rolls back to the savepoint, so
// the claim and fn's writes vanish together while tx stays usable; fn's
// error is returned unchanged (joined with a rollback failure, if any) and
// a panic is re-raised after the rollback. Every other error is handled the
// same way: whenever Mutate returns an error, nothing of it is left in tx.
// Only if that rollback itself fails (the error then says "ledger: mutate:
// rollback:") may the claim and fn's writes remain: roll tx back then.
// Mutate can be nested: each call has its own savepoint.
//
// A concurrent duplicate in another transaction waits for the first to
// commit or roll back, then replays (or, after a rollback, runs fn). It
// never runs fn while the first may still commit. On SQLite it waits in
// BEGIN, since transactions opened by sqlite.Open are immediate; on
// PostgreSQL it waits on the row (or on the first's uncommitted insert of
// it). Under READ COMMITTED, PostgreSQL's default, it then replays; under
// REPEATABLE READ or SERIALIZABLE the row came after its snapshot, and
// Mutate returns an error matching ErrRetryable: roll tx back and run the
// whole transaction again, which replays.
//
// Errors: ErrInvalidRequest (wrapped) for bad input, before tx is used;
// ErrKeyReused; ErrRetryable (wrapped); *InFlightError when the key is
// held in flight by a lease-mode claim (Ledger.Claim, idemhttp's
// Middleware), including one made earlier in tx itself (fn running Mutate
// or Claim with the same key); an error from fn; database errors, wrapped with
// "ledger: mutate:". T must survive encoding/json: the replayed Value is
// the JSON decoding of the first one; a value whose JSON does not decode
// back into T is refused (and rolled back) on the first execution, not
// stored for replays to fail on. A replay loses what JSON does not carry:
// unexported fields, and a time.Time's location name and monotonic reading
// (its instant and UTC offset stay). The stored Outcome has Status 0, no
// Header and the JSON as Body.
func Mutate[T any](ctx context.Context, l *Ledger, tx *sql.Tx, req Request, fn func(context.Context) (T, error)) (Result[T], error) {
	if err := checkMutate(ctx, l, tx, req, fn == nil); err != nil {
		return Result[T]{}, err
	}
	return mutate(ctx, l, sqlTxn{tx}, req, fn, jsonCodec[T]{})
}

// MutateOutcome is Mutate for an operation whose result is an Outcome, an
// HTTP answer typically: fn's Outcome is stored as it is (status, header
// lines, body), exactly as Ledger.Complete stores one in lease mode, and a
// replay returns the stored Outcome in Result.Value. Records of lease mode
// and of MutateOutcome are therefore alike: a key may move from one to the
// other (idemhttp's Middleware and TxHandler share their records), whereas
// Mutate stores JSON of its value with Status 0.
//
// Everything else is as for Mutate: the savepoint, the errors, fn's error
// or panic, nesting, concurrent duplicates.
func MutateOutcome(ctx context.Context, l *Ledger, tx *sql.Tx, req Request, fn func(context.Context) (Outcome, error)) (Result[Outcome], error) {
	if err := checkMutate(ctx, l, tx, req, fn == nil); err != nil {
		return Result[Outcome]{}, err
	}
	return mutate(ctx, l, sqlTxn{tx}, req, fn, outcomeCodec{})
}

// checkMutate refuses the arguments of Mutate and MutateOutcome that
// cannot work, before tx is used.
func checkMutate(ctx context.Context, l *Ledger, tx *sql.Tx, req Request, nilFn bool) error {
	switch {
	case ctx == nil:
		return invalidRequest("nil context")
	case l == nil:
		return invalidRequest("nil ledger")
	case tx == nil:
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

// jsonCodec is Mutate's: the value as JSON in the body, status 0.
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
	return Outcome{Body: body}, nil
}

func (jsonCodec[T]) decode(out Outcome) (T, error) {
	var v T
	if err := json.Unmarshal(out.Body, &v); err != nil {
		return v, fmt.Errorf("ledger: mutate: decode stored value: %w", err)
	}
	return v, nil
}

// outcomeCodec is MutateOutcome's: the Outcome as it is.
type outcomeCodec struct{}

func (outcomeCodec) encode(out Outcome) (Outcome, error) { return out, nil }
func (outcomeCodec) decode(out Outcome) (Outcome, error) { return out, nil }

// txn is what the core of Mutate needs from the caller's transaction: a way
// to run its savepoint statements, and the handle on which the ledger's
// queries run. *sql.Tx provides both through sqlTxn; a native pgx.Tx entry
// point would add its own txn.
type txn interface {
	exec(ctx context.Context, stmt string) error
	dbtx() DBTX
}

type sqlTxn struct{ tx *sql.Tx }

func (t sqlTxn) exec(ctx context.Context, stmt string) error {
	_, err := t.tx.ExecContext(ctx, stmt)
	return err
}

func (t sqlTxn) dbtx() DBTX { return t.tx }

// mutate is Mutate after its arguments were checked.
func mutate[T any](ctx context.Context, l *Ledger, tx txn, req Request, fn func(context.Context) (T, error), cd codec[T]) (Result[T], error) {
	var zero Result[T]
	sp := "idemledger_" + strconv.FormatUint(savepoints.Add(1), 10)
	if err := tx.exec(ctx, "SAVEPOINT "+sp); err != nil {
		return zero, fmt.Errorf("ledger: mutate: %w", err)
	}
	// undo drops everything since the savepoint and pops it, leaving tx as
	// it was before Mutate. It runs on failures that may come from a
	// cancelled ctx, so it ignores the cancellation.
	undo := func(cause error) error {
		uctx := context.WithoutCancel(ctx)
		if err := tx.exec(uctx, "ROLLBACK TO SAVEPOINT "+sp); err != nil {
			return errors.Join(cause, fmt.Errorf("ledger: mutate: rollback: %w", err))
		}
		if err := tx.exec(uctx, "RELEASE SAVEPOINT "+sp); err != nil {
			return errors.Join(cause, fmt.Errorf("ledger: mutate: rollback: %w", err))
		}
		return cause
	}
	release := func() error {
		if err := tx.exec(context.WithoutCancel(ctx), "RELEASE SAVEPOINT "+sp); err != nil {
			return fmt.Errorf("ledger: mutate: %w", err)
		}
		return nil
	}

	c, err := l.Claim(ctx, tx.dbtx(), req)
	if err != nil {
		return zero, undo(err)
	}
	if c.Replayed() {
		if err := release(); err != nil {
			return zero, undo(err)
		}
		v, err := cd.decode(c.Replay.Outcome)
		if err != nil {
			return zero, err
		}
		return Result[T]{Value: v, Replayed: true, Fence: c.Fence}, nil
	}

	v, err := runGuarded(ctx, fn, undo)
	if err != nil {
		return zero, undo(err)
	}
	out, err := cd.encode(v)
	if err != nil {
		return zero, undo(err)
	}
	if err := l.Complete(ctx, tx.dbtx(), c, out); err != nil {
		if errors.Is(err, sql.ErrTxDone) {
			err = fmt.Errorf("ledger: mutate: fn ended the transaction; it must leave tx open: %w", sql.ErrTxDone)
		}
		return zero, undo(err)
	}
	// A failed RELEASE leaves the savepoint open, with the claim, fn's
	// writes and the outcome inside: a caller who commits after the error
	// would commit them all. Undo, so that an error always means nothing
	// of this Mutate is left in tx.
	if err := release(); err != nil {
		return zero, undo(err)
	}
	return Result[T]{Value: v, Fence: c.Fence}, nil
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
