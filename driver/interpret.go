package driver

import (
	"context"
	"errors"
)

// Interpreted returns ex with every error it returns passed through
// interpret, the driver's reading of its engine's errors (marking them
// with this package's sentinels, see Mark). It keeps ex's Batcher when ex
// has one. Drivers wrap the Executors they hand out with it, so that no
// error leaves them uninterpreted.
func Interpreted(ex Executor, interpret func(error) error) Executor {
	i := &interpreted{ex: ex, f: interpret}
	if b, ok := ex.(Batcher); ok {
		return &interpretedBatcher{interpreted: i, b: b}
	}
	return i
}

type interpreted struct {
	ex Executor
	f  func(error) error
}

func (i *interpreted) Now(ctx context.Context) (int64, error) {
	now, err := i.ex.Now(ctx)
	return now, i.f(err)
}

func (i *interpreted) Claim(ctx context.Context, p ClaimParams) (ClaimResult, error) {
	r, err := i.ex.Claim(ctx, p)
	return r, i.f(err)
}

func (i *interpreted) Get(ctx context.Context, p GetParams) (GetResult, error) {
	r, err := i.ex.Get(ctx, p)
	return r, i.f(err)
}

func (i *interpreted) Complete(ctx context.Context, p CompleteParams) (CompleteResult, error) {
	r, err := i.ex.Complete(ctx, p)
	return r, i.f(err)
}

func (i *interpreted) Release(ctx context.Context, p ReleaseParams) (bool, error) {
	ok, err := i.ex.Release(ctx, p)
	return ok, i.f(err)
}

func (i *interpreted) MarkCommitted(ctx context.Context, p MarkParams) (bool, error) {
	ok, err := i.ex.MarkCommitted(ctx, p)
	return ok, i.f(err)
}

func (i *interpreted) Abandon(ctx context.Context, p LeaseParams) error {
	return i.f(i.ex.Abandon(ctx, p))
}

func (i *interpreted) Extend(ctx context.Context, p ExtendParams) (int64, bool, error) {
	until, ok, err := i.ex.Extend(ctx, p)
	return until, ok, i.f(err)
}

func (i *interpreted) PurgeBatch(ctx context.Context, p PurgeBatchParams) (PurgeBatchResult, error) {
	r, err := i.ex.PurgeBatch(ctx, p)
	return r, i.f(err)
}

func (i *interpreted) Stats(ctx context.Context, now int64) (StatsResult, error) {
	s, err := i.ex.Stats(ctx, now)
	return s, i.f(err)
}

func (i *interpreted) FindKey(ctx context.Context, key string, limit int) ([]Row, error) {
	rows, err := i.ex.FindKey(ctx, key, limit)
	return rows, i.f(err)
}

func (i *interpreted) ListInFlight(ctx context.Context, limit int) ([]Row, error) {
	rows, err := i.ex.ListInFlight(ctx, limit)
	return rows, i.f(err)
}

func (i *interpreted) Savepoint(ctx context.Context, name string) error {
	return i.f(i.ex.Savepoint(ctx, name))
}

func (i *interpreted) RollbackToSavepoint(ctx context.Context, name string) error {
	return i.f(i.ex.RollbackToSavepoint(ctx, name))
}

func (i *interpreted) ReleaseSavepoint(ctx context.Context, name string) error {
	return i.f(i.ex.ReleaseSavepoint(ctx, name))
}

type interpretedBatcher struct {
	*interpreted
	b Batcher
}

func (i *interpretedBatcher) SavepointClaim(ctx context.Context, name string, p ClaimParams) (ClaimResult, bool, error) {
	r, saved, err := i.b.SavepointClaim(ctx, name, p)
	return r, saved, i.f(err)
}

func (i *interpretedBatcher) CompleteRelease(ctx context.Context, p CompleteParams, name string) (CompleteResult, bool, error) {
	r, released, err := i.b.CompleteRelease(ctx, p, name)
	return r, released, i.f(err)
}

func (i *interpretedBatcher) CompleteReleaseCommit(ctx context.Context, p CompleteParams, name string) (CompleteResult, bool, bool, error) {
	r, released, committed, err := i.b.CompleteReleaseCommit(ctx, p, name)
	return r, released, committed, i.f(err)
}

// QueueStep forwards to the Batcher when it is a StepQueuer; otherwise
// nothing is queued.
func (i *interpretedBatcher) QueueStep(ctx context.Context, p RecordStepParams) (bool, error) {
	q, ok := i.b.(StepQueuer)
	if !ok {
		return false, nil
	}
	queued, err := q.QueueStep(ctx, p)
	return queued, i.f(err)
}

func (i *interpreted) CompletesSteps() bool {
	sc, ok := i.ex.(StepCompleter)
	return ok && sc.CompletesSteps()
}

func (i *interpreted) CompleteSteps(ctx context.Context, p CompleteParams) (bool, error) {
	sc, ok := i.ex.(StepCompleter)
	if !ok {
		return false, errors.New("driver: the executor cannot complete steps")
	}
	done, err := sc.CompleteSteps(ctx, p)
	return done, i.f(err)
}

func (i *interpreted) TableExists(ctx context.Context, table string) (bool, error) {
	ok, err := i.ex.TableExists(ctx, table)
	return ok, i.f(err)
}

func (i *interpreted) ColumnExists(ctx context.Context, table, column string) (bool, error) {
	ok, err := i.ex.ColumnExists(ctx, table, column)
	return ok, i.f(err)
}
func (i *interpreted) Steps(ctx context.Context, p StepsParams) ([]Step, error) {
	s, err := i.ex.Steps(ctx, p)
	return s, i.f(err)
}

func (i *interpreted) HasSteps(ctx context.Context, p StepsParams) (bool, error) {
	ok, err := i.ex.HasSteps(ctx, p)
	return ok, i.f(err)
}

func (i *interpreted) RecordStep(ctx context.Context, p RecordStepParams) (bool, error) {
	ok, err := i.ex.RecordStep(ctx, p)
	return ok, i.f(err)
}

func (i *interpreted) DeleteSteps(ctx context.Context, p StepsParams) (int64, error) {
	n, err := i.ex.DeleteSteps(ctx, p)
	return n, i.f(err)
}

func (i *interpreted) PurgeSteps(ctx context.Context, p PurgeStepsParams) (int64, error) {
	n, err := i.ex.PurgeSteps(ctx, p)
	return n, i.f(err)
}

func (i *interpreted) CountSteps(ctx context.Context) (int64, error) {
	n, err := i.ex.CountSteps(ctx)
	return n, i.f(err)
}

func (i *interpreted) FindSteps(ctx context.Context, key string, limit int) ([]StepRow, error) {
	rows, err := i.ex.FindSteps(ctx, key, limit)
	return rows, i.f(err)
}
