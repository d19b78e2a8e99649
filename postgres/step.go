package postgres

import (
	"context"
	"database/sql"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgdb"
	"github.com/idemledger/idemledger/internal/pgerr"
)

// The recorded steps of operations (driver.Stepper). RecordStep's guard
// reads the record FOR SHARE (see queries/postgres/ledger.sql).

func (e executor) Steps(ctx context.Context, p idriver.StepsParams) ([]idriver.Step, error) {
	got, err := pgdb.New(e.db).StepsGet(ctx, pgdb.StepsGetParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	if err != nil {
		return nil, (err)
	}
	out := make([]idriver.Step, len(got))
	for i, g := range got {
		out[i] = idriver.Step{Name: g.Name, Result: g.Result}
	}
	return out, nil
}

func (e executor) HasSteps(ctx context.Context, p idriver.StepsParams) (bool, error) {
	ok, err := pgdb.New(e.db).StepsExist(ctx, pgdb.StepsExistParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	return ok, (err)
}

func (e executor) RecordStep(ctx context.Context, p idriver.RecordStepParams) (bool, error) {
	result := p.Result
	if result == nil {
		result = []byte{} // the column is NOT NULL; an empty result is a result
	}
	n, err := pgdb.New(e.db).StepRecord(ctx, pgdb.StepRecordParams{
		Name: p.Name, Result: result, Now: p.Now, Scope: p.Scope, Key: p.Key,
		LeaseToken: sql.NullString{String: p.Token, Valid: true}, Fence: p.Fence,
	})
	return n == 1, (err)
}

func (e executor) DeleteSteps(ctx context.Context, p idriver.StepsParams) (int64, error) {
	n, err := pgdb.New(e.db).StepsDelete(ctx, pgdb.StepsDeleteParams{Scope: p.Scope, Key: p.Key, Fingerprint: p.Fingerprint})
	return n, (err)
}

func (e executor) PurgeSteps(ctx context.Context, p idriver.PurgeStepsParams) (int64, error) {
	n, err := pgdb.New(e.db).StepsPurgeBatch(ctx, pgdb.StepsPurgeBatchParams{Before: p.Before, BatchSize: int32(min(p.Limit, 1<<31-1))})
	return n, (err)
}

func (e executor) CountSteps(ctx context.Context) (int64, error) {
	n, err := pgdb.New(e.db).StepsCount(ctx)
	return n, (err)
}

func (e executor) FindSteps(ctx context.Context, key string, limit int) ([]idriver.StepRow, error) {
	got, err := pgdb.New(e.db).FindSteps(ctx, pgdb.FindStepsParams{Key: key, MaxRows: int32(min(limit, 1<<31-1))})
	if err != nil {
		return nil, (err)
	}
	out := make([]idriver.StepRow, len(got))
	for i, g := range got {
		out[i] = idriver.StepRow{Scope: g.Scope, Key: g.Key, Name: g.Name, Fingerprint: g.Fingerprint, Fence: g.Fence, Result: g.Result, CreatedAt: g.CreatedAt}
	}
	return out, nil
}

// CompletesSteps reports true: CompleteSteps deletes the steps in the
// outcome's statement (driver.StepCompleter).
func (e executor) CompletesSteps() bool { return true }

// CompleteSteps is Complete that deletes the key's steps with the outcome,
// in one statement (queries/postgres, CompleteSteps).
func (e executor) CompleteSteps(ctx context.Context, p idriver.CompleteParams) (bool, error) {
	if err := pgerr.CheckOutcome(p); err != nil {
		return false, err
	}
	n, err := pgdb.New(e.db).CompleteSteps(ctx, pgdb.CompleteStepsParams{
		LockTimeout: e.lockTimeout(ctx),
		Status:      sql.NullInt64{Int64: p.Status, Valid: true},
		Headers:     p.Headers,
		Body:        p.Body,
		Kind:        sql.NullString{String: p.Kind, Valid: p.Kind != ""},
		TtlMillis:   p.TTLMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  sql.NullString{String: p.Token, Valid: true},
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	return n == 1, pgerr.TooLarge(p, err)
}
