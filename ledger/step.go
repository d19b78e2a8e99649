package ledger

import (
	"bytes"
	"cmp"
	"context"
	"strings"
	"time"
	"unicode/utf8"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/hash"
)

// MaxStepNameLength is the longest step name RecordStep accepts, in bytes.
const MaxStepNameLength = 255

// Steps returns the steps recorded under c's key by the operation of c's
// fingerprint (see RecordStep), by name: a run that resumes an operation
// returns these results instead of running the steps again. Steps of
// another fingerprint (an earlier operation whose record expired and was
// taken over by another payload) are not returned. It reads on the
// driver's pool. A nil c returns ErrInvalidRequest.
func (l *Ledger[TTx]) Steps(ctx context.Context, c *Claim) (map[string][]byte, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, invalidRequest("nil claim")
	}
	got, err := l.db.Steps(ctx, stepsParams(c.Request.Scope, c.Request.Key, c.Request.Fingerprint))
	if err != nil {
		return nil, wrapOp("steps", classify(err))
	}
	out := make(map[string][]byte, len(got))
	for _, s := range got {
		// Never nil: an empty result is a recorded step (some engines
		// read an empty value as nil).
		out[s.Name] = append([]byte{}, s.Result...)
	}
	return out, nil
}

// HasSteps reports whether the operation of fp recorded any step under
// scope and key: whether a run that takes its record over can resume it
// rather than start afresh. It reads on the driver's pool.
func (l *Ledger[TTx]) HasSteps(ctx context.Context, scope, key string, fp hash.Digest) (bool, error) {
	if err := l.checkCall(ctx); err != nil {
		return false, err
	}
	if err := l.checkKey(scope, key); err != nil {
		return false, err
	}
	ok, err := l.db.HasSteps(ctx, stepsParams(scope, key, fp))
	if err != nil {
		return false, wrapOp("steps", classify(err))
	}
	return ok, nil
}

// RecordStep records result as the result of the step name of c's
// operation, in a commit of its own, so that a later run of the operation
// (after a crash, a lost lease, a release) gets it from Steps instead of
// running the step again. It records only while c's lease holds (token
// and fence on the in-flight record) and returns [ErrLeaseLost] otherwise:
// a run fenced out by a takeover cannot record a step the new holder
// would not see. The step keeps the record's fingerprint and c's fence; a
// step of the same name recorded before is replaced.
//
// Like Complete it ignores the cancellation of ctx and retries a lost
// connection or a busy store until c's lease runs out; after an attempt
// whose outcome was unknown, a later "lease lost" is checked against the
// steps recorded. A bad name (empty, longer than [MaxStepNameLength], not
// valid UTF-8, or holding a NUL byte) or a nil c returns ErrInvalidRequest.
func (l *Ledger[TTx]) RecordStep(ctx context.Context, c *Claim, name string, result []byte) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	p, err := l.stepParams(c, name, result)
	if err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	ok, unsure, err := l.persist(ctx, leaseDeadline(c), func(ctx context.Context) (bool, error) { return l.db.RecordStep(ctx, p) })
	if err != nil {
		return wrapOp("record step", err)
	}
	if !ok && unsure {
		// An earlier attempt may have recorded it before the lease was
		// lost.
		got, err := l.Steps(ctx, c)
		if err != nil {
			return wrapOp("record step", err)
		}
		if r, found := got[name]; found && bytes.Equal(r, p.Result) {
			return nil
		}
	}
	if !ok {
		return wrapOp("record step", ErrLeaseLost)
	}
	return nil
}

// RecordStepTx is RecordStep inside tx, a transaction of the ledger's
// database: the step commits, or vanishes, with the caller's own writes
// in tx (a database step: the writes and their record are one). The guard
// is the same, and holds until tx ends: a takeover of the record waits for
// tx on engines that lock rows, and cannot come between on SQLite. It does
// not retry: a broken connection took tx with it.
//
// Where the driver can (the transactions of pgxv5's Driver.Begin,
// when it batches), the record is not sent at once but with tx's COMMIT,
// in its round trip, and its guard is checked there: RecordStepTx then
// returns nil, and a guard that finds the lease lost makes the commit
// fail with an error matching [ErrLeaseLost], tx rolled back with the
// caller's writes. Either way, writes and record commit together or not
// at all.
func (l *Ledger[TTx]) RecordStepTx(ctx context.Context, tx TTx, c *Claim, name string, result []byte) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if l.d.IsNilTx(tx) {
		return invalidRequest("nil transaction")
	}
	p, err := l.stepParams(c, name, result)
	if err != nil {
		return err
	}
	ex := l.d.TxExecutor(tx)
	if q, ok := ex.(idriver.StepQueuer); ok {
		queued, err := q.QueueStep(ctx, p)
		if err != nil {
			return wrapOp("record step", classify(err))
		}
		if queued {
			return nil
		}
	}
	ok, err := ex.RecordStep(ctx, p)
	if err != nil {
		return wrapOp("record step", classify(err))
	}
	if !ok {
		return wrapOp("record step", ErrLeaseLost)
	}
	return nil
}

// ForgetSteps deletes the steps of c's operation once its record is no
// longer in flight (its outcome stored by Complete): they served their
// operation, and a request that comes after the record expires is a new
// one. It deletes nothing while the record is in flight. It runs on the
// driver's pool and ignores the cancellation of ctx; steps it leaves (it
// failed, or never ran) are deleted by Purge. A nil c returns
// ErrInvalidRequest.
func (l *Ledger[TTx]) ForgetSteps(ctx context.Context, c *Claim) error {
	if err := l.checkCall(ctx); err != nil {
		return err
	}
	if c == nil {
		return invalidRequest("nil claim")
	}
	ctx = context.WithoutCancel(ctx)
	p := stepsParams(c.Request.Scope, c.Request.Key, c.Request.Fingerprint)
	_, _, err := l.persist(ctx, time.Now().Add(persistMinBudget), func(ctx context.Context) (bool, error) {
		_, err := l.db.DeleteSteps(ctx, p)
		return true, err
	})
	if err != nil {
		return wrapOp("forget steps", err)
	}
	return nil
}

// CompleteSteps is Complete for an operation that recorded steps: where
// the driver can (the PostgreSQL drivers), the statement that stores the
// outcome also deletes the steps recorded under c's key, which served
// their operation, and forgot is true. Elsewhere it is Complete alone,
// forgot is false, and the caller deletes the steps with ForgetSteps
// afterwards. The error is Complete's.
func (l *Ledger[TTx]) CompleteSteps(ctx context.Context, c *Claim, out Outcome) (forgot bool, err error) {
	if err := l.checkCall(ctx); err != nil {
		return false, err
	}
	if err := checkClaim(c); err != nil {
		return false, err
	}
	sc, ok := l.db.(idriver.StepCompleter)
	if !ok || !sc.CompletesSteps() {
		return false, l.complete(ctx, l.db, c, out)
	}
	// The statement reports no times: the outcome is not kept in the
	// cache, and the first replay reads it.
	store := func(ctx context.Context, p idriver.CompleteParams) (idriver.CompleteResult, error) {
		ok, err := sc.CompleteSteps(ctx, p)
		return idriver.CompleteResult{OK: ok}, err
	}
	if err := l.completeWith(ctx, l.db, c, out, store); err != nil {
		return false, err
	}
	return true, nil
}

// StepRecord is a recorded step as an operator sees it (FindSteps).
type StepRecord struct {
	Scope, Key, Name string
	// Fingerprint is the fingerprint of the operation that recorded it.
	Fingerprint hash.Digest
	// Fence is the fence of the lease that recorded it.
	Fence     int64
	Result    []byte
	CreatedAt time.Time
}

// FindSteps returns up to limit steps recorded under key, whatever their
// scope, ordered by scope and time: an operator's look at a half-done
// operation. Like Find it reads the whole table. A bad key or a limit
// below 1 returns ErrInvalidRequest.
func (l *Ledger[TTx]) FindSteps(ctx context.Context, key string, limit int) ([]StepRecord, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.checkKey("", key); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, invalidRequest("find steps limit %d is below 1", limit)
	}
	got, err := l.db.FindSteps(ctx, key, limit)
	if err != nil {
		return nil, wrapOp("find steps", classify(err))
	}
	out := make([]StepRecord, len(got))
	for i, g := range got {
		out[i] = StepRecord{Scope: g.Scope, Key: g.Key, Name: g.Name, Fence: g.Fence, Result: g.Result, CreatedAt: fromMillis(g.CreatedAt)}
		copy(out[i].Fingerprint[:], g.Fingerprint)
	}
	return out, nil
}

// purgeSteps deletes, in batches of size, the steps recorded at before or
// earlier whose operation ended, and returns how many.
func (l *Ledger[TTx]) purgeSteps(ctx context.Context, before int64, size int) (int64, error) {
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := l.db.PurgeSteps(ctx, idriver.PurgeStepsParams{Before: before, Limit: size})
		total += n
		if err != nil {
			return total, classify(err)
		}
		if n < int64(size) {
			return total, nil
		}
	}
}

// stepParams checks a step's record and makes its parameters.
func (l *Ledger[TTx]) stepParams(c *Claim, name string, result []byte) (idriver.RecordStepParams, error) {
	if err := checkClaim(c); err != nil {
		return idriver.RecordStepParams{}, err
	}
	switch {
	case name == "":
		return idriver.RecordStepParams{}, invalidRequest("empty step name")
	case len(name) > MaxStepNameLength:
		return idriver.RecordStepParams{}, invalidRequest("step name is %d bytes, over the maximum of %d", len(name), MaxStepNameLength)
	case !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0:
		return idriver.RecordStepParams{}, invalidRequest("step name %q is not valid UTF-8 without NUL", name)
	}
	if result == nil {
		result = []byte{}
	}
	return idriver.RecordStepParams{
		LeaseParams: c.lease(), Name: name, Result: result,
		// The recording process's clock when the engine's is asked for:
		// the time only orders the steps and ages them for Purge, whose
		// margin (the TTL) dwarfs any skew between clocks.
		Now: cmp.Or(l.clock(), time.Now().UnixMilli()),
	}, nil
}

func stepsParams(scope, key string, fp hash.Digest) idriver.StepsParams {
	return idriver.StepsParams{Scope: scope, Key: key, Fingerprint: fp[:]}
}
