package pgxv5

import (
	"context"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgxdb"
)

// The recorded steps of operations (driver.Stepper). RecordStep's guard
// reads the record FOR SHARE (see queries/postgres/ledger.sql).

func (e executor) Steps(ctx context.Context, p idriver.StepsParams) ([]idriver.Step, error) {
	got, err := pgxdb.New(e.db).StepsGet(ctx, pgxdb.StepsGetParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	if err != nil {
		return nil, txDone(err)
	}
	out := make([]idriver.Step, len(got))
	for i, g := range got {
		out[i] = idriver.Step{Name: g.Name, Result: g.Result}
	}
	return out, nil
}

func (e executor) HasSteps(ctx context.Context, p idriver.StepsParams) (bool, error) {
	ok, err := pgxdb.New(e.db).StepsExist(ctx, pgxdb.StepsExistParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	return ok, txDone(err)
}

func (e executor) RecordStep(ctx context.Context, p idriver.RecordStepParams) (bool, error) {
	result := p.Result
	if result == nil {
		result = []byte{} // the column is NOT NULL; an empty result is a result
	}
	n, err := pgxdb.New(e.db).StepRecord(ctx, pgxdb.StepRecordParams{
		Name: p.Name, Result: result, Now: p.Now, Scope: p.Scope, Key: p.Key,
		LeaseToken: text(p.Token), Fence: p.Fence,
	})
	return n == 1, txDone(err)
}

func (e executor) DeleteSteps(ctx context.Context, p idriver.StepsParams) (int64, error) {
	n, err := pgxdb.New(e.db).StepsDelete(ctx, pgxdb.StepsDeleteParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	return n, txDone(err)
}

func (e executor) PurgeSteps(ctx context.Context, p idriver.PurgeStepsParams) (int64, error) {
	n, err := pgxdb.New(e.db).StepsPurgeBatch(ctx, pgxdb.StepsPurgeBatchParams{Before: p.Before, BatchSize: int32(min(p.Limit, 1<<31-1))})
	return n, txDone(err)
}

func (e executor) CountSteps(ctx context.Context) (int64, error) {
	n, err := pgxdb.New(e.db).StepsCount(ctx)
	return n, txDone(err)
}

func (e executor) FindSteps(ctx context.Context, key string, limit int) ([]idriver.StepRow, error) {
	got, err := pgxdb.New(e.db).FindSteps(ctx, pgxdb.FindStepsParams{Key: key, MaxRows: int32(min(limit, 1<<31-1))})
	if err != nil {
		return nil, txDone(err)
	}
	out := make([]idriver.StepRow, len(got))
	for i, g := range got {
		out[i] = idriver.StepRow{Scope: g.Scope, Key: g.Key, Name: g.Name, Fingerprint: g.Fingerprint, Fence: g.Fence, Result: g.Result, CreatedAt: g.CreatedAt}
	}
	return out, nil
}
