package mysql

import (
	"context"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/mysqldb"
)

// The recorded steps of operations (driver.Stepper). RecordStep's
// INSERT ... SELECT reads the record under a shared lock (see
// queries/mysql/ledger.sql); on the pool a deadlock is tried again like
// the other lease statements (onPool).

func (e executor) Steps(ctx context.Context, p idriver.StepsParams) ([]idriver.Step, error) {
	got, err := e.q().StepsGet(ctx, mysqldb.StepsGetParams{Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), Fingerprint: p.Fingerprint})
	if err != nil {
		return nil, err
	}
	out := make([]idriver.Step, len(got))
	for i, g := range got {
		out[i] = idriver.Step{Name: string(g.Name), Result: g.Result}
	}
	return out, nil
}

func (e executor) HasSteps(ctx context.Context, p idriver.StepsParams) (bool, error) {
	n, err := e.q().StepsExist(ctx, mysqldb.StepsExistParams{Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), Fingerprint: p.Fingerprint})
	return n != 0, err
}

func (e executor) RecordStep(ctx context.Context, p idriver.RecordStepParams) (bool, error) {
	result := p.Result
	if result == nil {
		result = []byte{} // the column is NOT NULL; an empty result is a result
	}
	record := func() (bool, error) {
		n, err := e.q().StepRecord(ctx, mysqldb.StepRecordParams{
			Name: []byte(p.Name), Result: result, CreatedAt: p.Now,
			Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), LeaseToken: token(p.Token), Fence: p.Fence,
		})
		// ON DUPLICATE KEY UPDATE counts a replaced row twice, and a
		// replaced row with the same values as none: any row means the
		// guard held.
		return n >= 1, err
	}
	if e.tx != nil {
		return record()
	}
	return onPool(record)
}

func (e executor) DeleteSteps(ctx context.Context, p idriver.StepsParams) (int64, error) {
	del := func() (int64, error) {
		return e.q().StepsDelete(ctx, mysqldb.StepsDeleteParams{Scope: []byte(p.Scope), IdempotencyKey: []byte(p.Key), Fingerprint: p.Fingerprint})
	}
	if e.tx != nil {
		return del()
	}
	return onPool(del)
}

func (e executor) PurgeSteps(ctx context.Context, p idriver.PurgeStepsParams) (int64, error) {
	return e.q().StepsPurgeBatch(ctx, mysqldb.StepsPurgeBatchParams{Before: p.Before, Limit: int32(min(p.Limit, 1<<31-1))})
}

func (e executor) CountSteps(ctx context.Context) (int64, error) { return e.q().StepsCount(ctx) }

func (e executor) FindSteps(ctx context.Context, key string, limit int) ([]idriver.StepRow, error) {
	got, err := e.q().FindSteps(ctx, mysqldb.FindStepsParams{IdempotencyKey: []byte(key), Limit: int32(min(limit, 1<<31-1))})
	if err != nil {
		return nil, err
	}
	out := make([]idriver.StepRow, len(got))
	for i, g := range got {
		out[i] = idriver.StepRow{Scope: string(g.Scope), Key: string(g.Key), Name: string(g.Name), Fingerprint: g.Fingerprint, Fence: g.Fence, Result: g.Result, CreatedAt: g.CreatedAt}
	}
	return out, nil
}
