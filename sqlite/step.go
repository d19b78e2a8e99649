package sqlite

import (
	"context"
	"database/sql"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/sqlitedb"
)

// The recorded steps of operations (driver.Stepper). SQLite has one
// writer, so RecordStep's guard and the step's insert cannot be split by
// a takeover.

func (e executor) Steps(ctx context.Context, p idriver.StepsParams) ([]idriver.Step, error) {
	got, err := e.queries(ctx).StepsGet(ctx, sqlitedb.StepsGetParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	if err != nil {
		return nil, err
	}
	out := make([]idriver.Step, len(got))
	for i, g := range got {
		out[i] = idriver.Step{Name: g.Name, Result: g.Result}
	}
	return out, nil
}

func (e executor) HasSteps(ctx context.Context, p idriver.StepsParams) (bool, error) {
	return e.queries(ctx).StepsExist(ctx, sqlitedb.StepsExistParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
}

func (e executor) RecordStep(ctx context.Context, p idriver.RecordStepParams) (bool, error) {
	n, err := e.queries(ctx).StepRecord(ctx, sqlitedb.StepRecordParams{
		Name: p.Name, Result: notNil(p.Result), Now: p.Now, Scope: p.Scope, Key: p.Key,
		LeaseToken: sql.NullString{String: p.Token, Valid: true}, Fence: p.Fence,
	})
	return n == 1, err
}

func (e executor) DeleteSteps(ctx context.Context, p idriver.StepsParams) (int64, error) {
	return e.queries(ctx).StepsDelete(ctx, sqlitedb.StepsDeleteParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
}

func (e executor) PurgeSteps(ctx context.Context, p idriver.PurgeStepsParams) (int64, error) {
	return e.queries(ctx).StepsPurgeBatch(ctx, sqlitedb.StepsPurgeBatchParams{Before: p.Before, BatchSize: int64(p.Limit)})
}

func (e executor) CountSteps(ctx context.Context) (int64, error) {
	return e.queries(ctx).StepsCount(ctx)
}

func (e executor) FindSteps(ctx context.Context, key string, limit int) ([]idriver.StepRow, error) {
	got, err := e.queries(ctx).FindSteps(ctx, sqlitedb.FindStepsParams{Key: key, MaxRows: int64(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]idriver.StepRow, len(got))
	for i, g := range got {
		out[i] = idriver.StepRow{Scope: g.Scope, Key: g.Key, Name: g.Name, Fingerprint: g.Fingerprint, Fence: g.Fence, Result: g.Result, CreatedAt: g.CreatedAt}
	}
	return out, nil
}

// notNil is b, or an empty slice for nil: a step's result column is NOT
// NULL, and an empty result is a result.
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
