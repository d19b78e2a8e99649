package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// StepLedger is what the steps of a run need of its ledger, beyond
// [Ledger]: *[ledger.Ledger] has it. A run whose ledger lacks it cannot
// record steps ([ErrNoSteps]), and [Decide] never resumes one.
type StepLedger interface {
	Steps(ctx context.Context, c *ledger.Claim) (map[string][]byte, error)
	HasSteps(ctx context.Context, scope, key string, fp hash.Digest) (bool, error)
	RecordStep(ctx context.Context, c *ledger.Claim, name string, result []byte) error
	ForgetSteps(ctx context.Context, c *ledger.Claim) error
	CompleteSteps(ctx context.Context, c *ledger.Claim, out ledger.Outcome) (forgot bool, err error)
}

// ErrNoSteps is returned by [Run.Step] and [StepTx] when the run's ledger
// keeps no steps (it is not a [StepLedger]).
var ErrNoSteps = errors.New("lifecycle: the run's ledger keeps no steps")

// steps is a run's view of its recorded steps: loaded from the ledger on
// the first Step, then kept up to date by the run's own records.
type steps struct {
	mu     sync.Mutex
	loaded bool
	byName map[string][]byte
	// used: the run loaded or recorded at least one step, so that its
	// Complete deletes them.
	used bool
}

// Step runs the step name of the run's operation once across every run of
// it: if an earlier run (one that crashed, lost its lease, or was
// released) recorded the step, Step returns its result without calling
// fn; otherwise it calls fn and records the result under the key, in a
// commit of its own, before it returns. Use it for an effect outside the
// database (a payment provider, a mail service): fn gets a key derived
// from the run's scope, idempotency key and name ([StepKey]) to forward
// to that provider as its idempotency key, so that a provider that
// deduplicates by key absorbs the one repeat Step cannot rule out: a run
// that stopped between fn's effect and its record runs fn again.
//
// A step whose fn fails is not recorded, and Step returns fn's error; the
// handler decides (a retry runs fn again). When the lease is lost, Step
// does not call fn, and returns an error matching [ledger.ErrLeaseLost];
// a record refused because a retry took the record over meanwhile
// returns that error too, with fn's effect made: the handler must not go
// on. Once the operation completes ([Run.Complete]) its steps are
// deleted: a request with the key after the record expired is a new one.
//
// Steps of a run are meant to be called in sequence from its handler;
// names are up to [ledger.MaxStepNameLength] bytes, unique within the
// operation.
//
// On a nil *Run (a request that no claim protects: it carried no key, or
// the store failed open) Step calls fn with an empty key and records
// nothing: there is no operation to resume. The integrations' Step
// functions rely on it.
func (r *Run) Step(ctx context.Context, name string, fn func(ctx context.Context, key string) ([]byte, error)) ([]byte, error) {
	if r == nil {
		return fn(ctx, "")
	}
	sl, ok := r.l.(StepLedger)
	if !ok {
		return nil, ErrNoSteps
	}
	if got, done, err := r.recorded(ctx, sl, name); done || err != nil {
		return got, err
	}
	result, err := fn(ctx, StepKey(r.claim.Request.Scope, r.Key(), name))
	if err != nil {
		return nil, err
	}
	if err := sl.RecordStep(ctx, r.current(), name, result); err != nil {
		return nil, r.stepFailed(name, err)
	}
	r.keep(name, result)
	return result, nil
}

// StepTx runs the database step name of r's operation once across every
// run of it, inside tx, a transaction of l's database that the caller
// begun and commits: if an earlier run recorded the step, StepTx returns
// its result without calling fn; otherwise it calls fn with tx and records
// its result in tx ([ledger.Ledger.RecordStepTx]), so that fn's writes and
// the record commit, or vanish, together. There is no window in which one
// exists without the other: a retry after any crash finds both or
// neither. l must be the ledger r's claim was made with.
//
// The record is guarded by r's lease like [Run.Step]'s; should the caller
// commit tx after an error, fn's writes stand without a record, so roll
// it back. On engines that lock rows (PostgreSQL, MySQL) the guard holds
// the key's record locked for share until tx ends, so that a takeover
// cannot slip between the guard and the commit: commit tx promptly, and
// call [Run.Commit] (or anything else that writes the record on the pool)
// after tx ends, never between StepTx and the commit, where it would wait
// for tx, which waits for it. The run's heartbeat waits for tx meanwhile.
// On a transaction of pgxv5's Driver.Begin the record travels with tx's
// COMMIT instead, in its round trip ([ledger.Ledger.RecordStepTx]): the
// guard runs there, and a lease lost by then fails the commit with an
// error matching [ledger.ErrLeaseLost], fn's writes rolled back. The
// result counts as recorded for r from the moment StepTx returns: a
// caller whose commit of tx fails, or who rolls tx back, must not go on
// with r. A nil r calls fn and records nothing, like [Run.Step].
func StepTx[TTx any](ctx context.Context, r *Run, l *ledger.Ledger[TTx], tx TTx, name string, fn func(ctx context.Context, tx TTx) ([]byte, error)) ([]byte, error) {
	if r == nil {
		return fn(ctx, tx)
	}
	if got, done, err := r.recorded(ctx, l, name); done || err != nil {
		return got, err
	}
	result, err := fn(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := l.RecordStepTx(ctx, tx, r.current(), name, result); err != nil {
		return nil, r.stepFailed(name, err)
	}
	r.keep(name, result)
	return result, nil
}

// StepKey is the idempotency key [Run.Step] forwards for the step name of
// the operation under scope and key: [hash.DeriveKey] of the three, so
// that two scopes that use the same key never share a provider's record.
func StepKey(scope, key, name string) string { return hash.DeriveKey(scope, key, name) }

// recorded returns the recorded result of the step name (done true), after
// loading the run's steps once; err when the lease is known lost or the
// load failed: the step must not run then.
func (r *Run) recorded(ctx context.Context, sl StepLedger, name string) (result []byte, done bool, err error) {
	if err := r.holds(); err != nil {
		return nil, false, fmt.Errorf("lifecycle: step %q not run: %w", name, err)
	}
	s := &r.steps
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded && r.claim.Fence == 1 && r.claim.CommittedAt.IsZero() {
		// A brand-new record: Release keeps a record and its fence, so
		// fence 1 means no earlier run of this operation recorded
		// anything, and steps found under the key would belong to an
		// older operation whose record was purged. Nothing to load.
		s.loaded = true
	}
	if !s.loaded {
		got, err := sl.Steps(ctx, r.current())
		if err != nil {
			r.emit(ledger.Event{Kind: FailureKind(err), Op: "steps", Err: err})
			return nil, false, fmt.Errorf("lifecycle: step %q not run: %w", name, err)
		}
		s.byName, s.loaded, s.used = got, true, len(got) > 0
	}
	result, done = s.byName[name]
	return result, done, nil
}

// keep notes the step name as recorded with result.
func (r *Run) keep(name string, result []byte) {
	s := &r.steps
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName == nil {
		s.byName = map[string][]byte{}
	}
	s.byName[name], s.used = result, true
}

// stepFailed reports a step whose record failed and returns the error for
// the handler; a lost lease also cancels the handler's contexts.
func (r *Run) stepFailed(name string, err error) error {
	r.emit(ledger.Event{Kind: FailureKind(err), Op: "step", Err: err})
	if errors.Is(err, ledger.ErrLeaseLost) {
		r.lose(err)
	}
	return fmt.Errorf("lifecycle: step %q ran but is not recorded: %w", name, err)
}

// holds returns why the run may not begin a step: the lease is known
// lost, except a lease that ran out unconfirmed after the commit mark was
// written (the run goes on then, see Start).
func (r *Run) holds() error {
	err := r.Lost()
	if err == nil || (errors.Is(err, ErrLeaseExpired) && r.committed.Load() && r.markWritten()) {
		return nil
	}
	return err
}

// complete stores out under c, the run's lease: for a run that used steps,
// with [StepLedger.CompleteSteps], so that the steps go with the outcome's
// statement where the ledger can; forgot reports whether they did.
func (r *Run) complete(ctx context.Context, c *ledger.Claim, out ledger.Outcome) (forgot bool, err error) {
	if sl, ok := r.l.(StepLedger); ok && r.usedSteps() {
		return sl.CompleteSteps(ctx, c, out)
	}
	return false, r.l.Complete(ctx, c, out)
}

// usedSteps reports whether the run loaded or recorded a step.
func (r *Run) usedSteps() bool {
	s := &r.steps
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// forgetSteps deletes the steps of a run that used any, after its outcome
// was stored without them; a failure is reported with Op "forget steps"
// and left to Purge (or to the claim that starts the key's next
// operation).
func (r *Run) forgetSteps(ctx context.Context) {
	sl, ok := r.l.(StepLedger)
	if !r.usedSteps() || !ok {
		return
	}
	if err := sl.ForgetSteps(ctx, r.current()); err != nil {
		r.emit(ledger.Event{Kind: FailureKind(err), Op: "forget steps", Err: err})
	}
}

// resumable reports whether the operation of req recorded steps, so that
// a retry resumes it rather than settle it as NotStored.
func resumable(ctx context.Context, l Ledger, req ledger.Request) (bool, error) {
	sl, ok := l.(StepLedger)
	if !ok {
		return false, nil
	}
	return sl.HasSteps(ctx, req.Scope, req.Key, req.Fingerprint)
}
