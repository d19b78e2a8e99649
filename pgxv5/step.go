package pgxv5

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
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

// queuedStmt is a statement that travels with a COMMIT, and its
// arguments.
type queuedStmt struct {
	sql  string
	args []any
}

// QueueStep queues the step's record to travel with the COMMIT of e's
// transaction (driver.StepQueuer), when that transaction is the driver's
// own (Driver.Begin) and the driver batches: the record, guarded so that
// a lease that no longer holds fails it and the server skips the COMMIT
// behind it, goes in the COMMIT's round trip. Elsewhere it queues nothing.
func (e executor) QueueStep(ctx context.Context, p idriver.RecordStepParams) (bool, error) {
	d, own := e.tx.(*deferredTx)
	if !own || d.closed || d.mode == batchNone {
		return false, nil
	}
	result := p.Result
	if result == nil {
		result = []byte{}
	}
	// The generated code writes the statement and its arguments into
	// rec, which runs nothing.
	rec := &recorder{}
	if _, err := pgxdb.New(rec).StepRecord(ctx, pgxdb.StepRecordParams{
		Name: p.Name, Result: result, Now: p.Now, Scope: p.Scope, Key: p.Key,
		LeaseToken: text(p.Token), Fence: p.Fence,
	}); err != nil {
		return false, err
	}
	d.queued = append(d.queued, queuedStmt{sql: guarded(rec.sql), args: rec.args})
	return true, nil
}

// recorder is a pgxdb.DBTX that keeps the statement run through it and
// runs nothing; its Exec reports one row, as the statement would.
type recorder struct {
	pgxdb.DBTX // never reached: only Exec is used
	sql        string
	args       []any
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.sql, r.args = sql, args
	return pgconn.NewCommandTag("INSERT 0 1"), nil
}

// errStepRefused is the error of a COMMIT that a queued step record
// stopped.
var errStepRefused = fmt.Errorf("pgxv5: transaction rolled back: a step's record found its lease lost: %w", idriver.ErrLeaseLost)

// commitQueued sends the queued step records and COMMIT (and BEGIN ahead
// of them, when none was sent yet) in one round trip, and ends the
// transaction. On a transaction whose BEGIN went alone through pgx (inner)
// they go on its connection, and inner is left unended: the COMMIT sent
// here ends it on the server, and a pgx transaction holds nothing else.
// A record whose guard fails makes the server skip the rest: the
// transaction is rolled back then, and the error matches
// driver.ErrLeaseLost.
func (t *deferredTx) commitQueued(ctx context.Context, queued []queuedStmt) error {
	var before []string
	if !t.begun {
		t.begun = true
		before = []string{"BEGIN"}
	}
	s, err := sendQueued(ctx, t.conn, t.mode, before, queued)
	if err != nil {
		// Nothing was sent (a statement did not prepare): the
		// transaction is as it was; end it.
		if rerr := t.rollbackConn(ctx); rerr != nil {
			return rerr
		}
		return err
	}
	for range before {
		if _, err = s.exec(); err != nil {
			break
		}
	}
	refused := false
	for i := 0; err == nil && i < len(queued); i++ {
		rows := s.rows()
		var n, one int64
		if rows.Next() {
			err = rows.Scan(&n, &one)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == guardedSQLState {
			refused, err = true, errStepRefused
		}
	}
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = s.exec()
	}
	cerr := s.close()
	switch {
	case refused:
		// The server skipped the COMMIT: the transaction is aborted,
		// and ends with a ROLLBACK.
		if rerr := t.rollbackConn(ctx); rerr != nil {
			return rerr
		}
		return err
	case err == nil && cerr != nil:
		err = cerr
	case err == nil && tag.String() == "ROLLBACK":
		err = pgx.ErrTxCommitRollback
	}
	if err != nil && t.conn.PgConn().TxStatus() == 'E' {
		// A statement failed before the COMMIT, which did not run.
		if rerr := t.rollbackConn(ctx); rerr != nil {
			return rerr
		}
		return err
	}
	t.end(ctx, err)
	return err
}

// rollbackConn rolls back on the connection what is open there, and ends
// the transaction.
func (t *deferredTx) rollbackConn(ctx context.Context) error {
	var err error
	if t.conn.PgConn().TxStatus() != 'I' {
		if _, err = t.conn.Exec(ctx, "rollback"); err != nil {
			err = fmt.Errorf("rollback failed: %w", err)
		}
	}
	t.end(ctx, err)
	return err
}

// sendQueued sends before, the queued statements and COMMIT in one round
// trip on conn, as Mutate's pairs are sent (batch.go): a pipeline with the
// statements prepared once per connection, or a pgx.Batch.
func sendQueued(ctx context.Context, conn *pgx.Conn, mode batchMode, before []string, queued []queuedStmt) (sent, error) {
	if mode != batchPipeline {
		b := &pgx.Batch{}
		for _, stmt := range before {
			b.Queue(stmt)
		}
		for _, q := range queued {
			b.Queue(q.sql, q.args...)
		}
		b.Queue("commit")
		return batchSent{conn.SendBatch(ctx, b)}, nil
	}
	type built struct {
		sd  *pgconn.StatementDescription
		eqb pgx.ExtendedQueryBuilder
	}
	stmts := make([]built, len(queued))
	for i, q := range queued {
		sd, err := conn.Prepare(ctx, q.sql, q.sql)
		if err != nil {
			return nil, err
		}
		stmts[i].sd = sd
		if err := stmts[i].eqb.Build(conn.TypeMap(), sd, q.args); err != nil {
			return nil, err
		}
	}
	pl := conn.PgConn().StartPipeline(ctx)
	for _, stmt := range before {
		pl.SendQueryParams(stmt, nil, nil, nil, nil)
	}
	for i := range stmts {
		pl.SendQueryStatement(stmts[i].sd, stmts[i].eqb.ParamValues, stmts[i].eqb.ParamFormats, stmts[i].eqb.ResultFormats)
	}
	pl.SendQueryParams("commit", nil, nil, nil, nil)
	s := &pipelineSent{p: pl, typeMap: conn.TypeMap()}
	if err := pl.Sync(); err != nil {
		s.err = err
	}
	return s, nil
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
	n, err := pgxdb.New(e.db).CompleteSteps(ctx, pgxdb.CompleteStepsParams{
		LockTimeout: e.lockTimeout(ctx),
		Status:      pgtype.Int8{Int64: p.Status, Valid: true},
		Headers:     p.Headers,
		Body:        p.Body,
		Kind:        pgtype.Text{String: p.Kind, Valid: p.Kind != ""},
		TtlMillis:   p.TTLMillis,
		Scope:       p.Scope,
		Key:         p.Key,
		LeaseToken:  text(p.Token),
		Fence:       p.Fence,
		Now:         at(p.Now),
	})
	return n == 1, pgerr.TooLarge(p, txDone(err))
}
