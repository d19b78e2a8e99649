package driver

import "context"

// Stepper is the part of an Executor that keeps the recorded steps of
// operations (schema migration 8): what a handler finished under a key,
// so that a retry returns it instead of running it again. A step belongs
// to the operation of its record's fingerprint.
type Stepper interface {
	// Steps returns the steps recorded under p's key by the operation of
	// p's fingerprint, in no order.
	Steps(ctx context.Context, p StepsParams) ([]Step, error)
	// HasSteps reports whether the operation of p's fingerprint recorded
	// any step under p's key.
	HasSteps(ctx context.Context, p StepsParams) (bool, error)
	// RecordStep records a step with the fingerprint and fence of the
	// key's record, replacing a step of the same name, only while p's
	// lease holds (the record in flight with p's token and fence), and
	// reports whether it did. The guard reads the record's latest
	// version, and a takeover after it waits until the step commits (or,
	// on an engine with one writer, cannot come between).
	RecordStep(ctx context.Context, p RecordStepParams) (bool, error)
	// DeleteSteps deletes the steps of p's fingerprint under p's key,
	// only when the key's record is not in flight, and says how many.
	DeleteSteps(ctx context.Context, p StepsParams) (int64, error)
	// PurgeSteps deletes up to p.Limit steps recorded at p.Before or
	// earlier whose operation ended (no record in flight has their key
	// and fingerprint), oldest first, and says how many.
	PurgeSteps(ctx context.Context, p PurgeStepsParams) (int64, error)
	// CountSteps counts every recorded step.
	CountSteps(ctx context.Context) (int64, error)
	// FindSteps returns up to limit steps recorded under key in any
	// scope, ordered by scope and time: for operators.
	FindSteps(ctx context.Context, key string, limit int) ([]StepRow, error)
}

// StepQueuer is implemented by the Executors of drivers
// ([Driver.TxExecutor]'s) that can send a step's record together with the
// COMMIT of its transaction, in the COMMIT's round trip, so that a
// database step costs the caller's transaction no round trip of its own.
type StepQueuer interface {
	// QueueStep queues the record of p (as RecordStep would run it, with
	// its guard) to run just before the transaction commits, and reports
	// whether it did; when it did not (the transaction is not one it can
	// do this for), the caller runs RecordStep instead. A queued record
	// whose guard finds the lease lost stops the COMMIT: the transaction
	// rolls back, with the caller's writes, and the commit's error
	// matches [ErrLeaseLost]. A rollback drops the queued records.
	QueueStep(ctx context.Context, p RecordStepParams) (queued bool, err error)
}

// StepCompleter is implemented by Executors that can delete an
// operation's steps in the statement that stores its outcome, so that a
// handler with steps pays no statement of its own for their deletion.
// Executors wrapped by [Interpreted] have its methods whatever the
// driver's: CompletesSteps tells.
type StepCompleter interface {
	// CompletesSteps reports whether CompleteSteps can be called.
	CompletesSteps() bool
	// CompleteSteps is Executor.Complete that, when it stores the
	// outcome, deletes every step recorded under p's key in the same
	// statement, and nothing when the lease did not hold.
	CompleteSteps(ctx context.Context, p CompleteParams) (bool, error)
}

// StepsParams names the steps of one operation: its key and fingerprint.
type StepsParams struct {
	Scope, Key  string
	Fingerprint []byte
}

// Step is a recorded step's name and result.
type Step struct {
	Name   string
	Result []byte
}

// RecordStepParams records a step under a held lease. Now is the time it
// is recorded (never 0: the ledger passes its clock).
type RecordStepParams struct {
	LeaseParams
	Name   string
	Result []byte
	Now    int64
}

// PurgeStepsParams deletes up to Limit steps recorded at Before or earlier.
type PurgeStepsParams struct {
	Before int64
	Limit  int
}

// StepRow is a recorded step as stored.
type StepRow struct {
	Scope, Key, Name string
	Fingerprint      []byte
	Fence            int64
	Result           []byte
	CreatedAt        int64
}
