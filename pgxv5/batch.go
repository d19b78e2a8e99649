package pgxv5

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgxbatch"
)

// Mutate's savepoint statements travel with the ledger statement next to
// them (driver.Batcher): SAVEPOINT with the claim, the outcome's UPDATE with
// RELEASE SAVEPOINT, each pair in one round trip that ends with one Sync,
// so that when a statement fails the server skips the rest.
//
// How depends on the connection's pgx.QueryExecMode:
//
//   - QueryExecModeCacheStatement (pgx's default): a pgconn pipeline. A
//     pgx.Batch would prepare every statement it has not seen on the
//     connection, in a round trip of its own, and each savepoint's name is
//     new; the pipeline sends the savepoint statements unprepared and the
//     ledger's statement prepared once per connection (Conn.Prepare, keyed
//     by its text, as pgx's own Exec and Query then find it).
//   - QueryExecModeExec and QueryExecModeSimpleProtocol: a pgx.Batch, which
//     prepares nothing in these modes.
//   - The description-caching modes: one statement at a time, as the
//     database/sql drivers do (a batch would describe each new savepoint
//     name in a round trip of its own).
//   - Any mode with a Tracer in the connection's configuration: one
//     statement at a time, through pgx's Exec and Query, which trace.

// batchMode is how the driver sends Mutate's pairs of statements
// (pgxbatch.Mode, the rule the tests read too).
type batchMode = pgxbatch.Mode

const (
	batchNone     = pgxbatch.None     // one statement at a time
	batchPipeline = pgxbatch.Pipeline // a pgconn pipeline, ledger statement prepared
	batchBatch    = pgxbatch.Batch    // a pgx.Batch
)

// modeOf returns how to batch on db's connections, read from its
// configuration (no round trip).
func modeOf(db DB) batchMode {
	switch c := db.(type) {
	case *pgxpool.Pool:
		if c != nil {
			return pgxbatch.Of(c.Config().ConnConfig)
		}
	case *pgx.Conn:
		if c != nil {
			return pgxbatch.Of(c.Config())
		}
	}
	return batchNone
}

// batches reports whether e sends pairs of statements in one round trip:
// not in the description-caching modes, nor in pipeline mode on a pgx.Tx
// that does not give its *pgx.Conn (a pgx.Batch would prepare each
// savepoint name there).
func (e executor) batches() bool {
	return e.mode == batchBatch || e.mode == batchPipeline && e.tx.Conn() != nil
}

// SavepointClaim runs SAVEPOINT name and the claim in one round trip (see
// driver.Batcher).
func (e executor) SavepointClaim(ctx context.Context, name string, a idriver.ClaimParams) (idriver.ClaimResult, bool, error) {
	if e.tx == nil {
		return idriver.ClaimResult{}, false, errNoTx
	}
	if !e.batches() {
		if err := e.Savepoint(ctx, name); err != nil {
			return idriver.ClaimResult{}, false, err
		}
		res, err := e.Claim(ctx, a)
		return res, true, err
	}
	p := &pair{tx: e.tx, mode: e.mode, before: []string{"SAVEPOINT " + name}}
	if d, ok := e.tx.(*deferredTx); ok && d.batchBegin() {
		// The transaction's BEGIN travels with them (tx.go).
		p.before = []string{"BEGIN", "SAVEPOINT " + name}
		defer d.checkBegun(ctx)
	}
	res, err := executor{db: p, tx: e.tx, mode: e.mode}.Claim(ctx, a)
	if p.beforeErr != nil {
		return idriver.ClaimResult{}, false, txDone(p.beforeErr)
	}
	return res, true, err
}

// CompleteRelease runs the outcome's UPDATE and, only when it stored the
// outcome, RELEASE SAVEPOINT name, in one round trip (see driver.Batcher).
func (e executor) CompleteRelease(ctx context.Context, c idriver.CompleteParams, name string) (res idriver.CompleteResult, released bool, err error) {
	if e.tx == nil {
		return res, false, errNoTx
	}
	if !e.batches() {
		if res, err = e.Complete(ctx, c); err != nil || !res.OK {
			return res, false, err
		}
		err = e.ReleaseSavepoint(ctx, name)
		return res, err == nil, err
	}
	p := &pair{tx: e.tx, mode: e.mode, after: []string{"RELEASE SAVEPOINT " + name}, guard: true}
	if res, err = (executor{db: p, tx: e.tx, mode: e.mode}).Complete(ctx, c); err != nil || !res.OK {
		return res, false, err
	}
	if p.afterErr != nil {
		return res, false, txDone(p.afterErr)
	}
	return res, true, nil
}

// CompleteReleaseCommit runs the outcome's UPDATE, RELEASE SAVEPOINT name
// and COMMIT in one round trip when the transaction is the driver's own
// ([Driver.Begin]'s, tx.go) and the driver batches; otherwise CompleteRelease,
// then tx.Commit (see driver.Batcher).
func (e executor) CompleteReleaseCommit(ctx context.Context, c idriver.CompleteParams, name string) (res idriver.CompleteResult, released, committed bool, err error) {
	d, own := e.tx.(*deferredTx)
	if !own || !e.batches() || d.inner != nil || !d.begun || d.closed || len(d.queued) > 0 {
		// tx.Commit sends the COMMIT, with the step records queued
		// before it (step.go), if any.
		if res, released, err = e.CompleteRelease(ctx, c, name); err != nil || !released {
			return res, released, false, err
		}
		err = txDone(e.tx.Commit(ctx))
		return res, true, err == nil, err
	}
	p := &pair{tx: e.tx, mode: e.mode, after: []string{"RELEASE SAVEPOINT " + name, "COMMIT"}, guard: true}
	if res, err = (executor{db: p, tx: e.tx, mode: e.mode}).Complete(ctx, c); err != nil || !res.OK {
		// The outcome failed, or the lease did not hold: the server
		// skipped the rest, and the transaction is still open.
		return res, false, false, err
	}
	switch {
	case p.afterErr != nil && p.afterErrAt == 0:
		// The RELEASE failed; the COMMIT did not run.
		return res, false, false, txDone(p.afterErr)
	case p.afterErr == nil && p.commitTag.String() == "ROLLBACK":
		p.afterErr = pgx.ErrTxCommitRollback
	}
	// The COMMIT ran, or may have: the transaction is over either way.
	d.end(ctx, p.afterErr)
	if p.afterErr != nil {
		return res, true, false, p.afterErr
	}
	return res, true, true, nil
}

// pair is the pgxdb.DBTX of a batched step: the first statement that the
// generated code runs through it travels with before (sent ahead of it)
// and after (sent behind it) in one round trip; later statements run on
// tx on their own. Reusing the generated code keeps the statements, their
// arguments and their scans in one place (internal/pgxdb).
type pair struct {
	tx            pgx.Tx
	mode          batchMode
	before, after []string // run before and after the statement, in order
	// guard makes the first statement, an UPDATE, fail when it changes no
	// row, so that the server skips after: the outcome's RELEASE must not
	// run when the lease did not hold, for Mutate to roll back to the
	// savepoint. The UPDATE then reports 0 rows and no error, as unbatched.
	guard bool

	used                bool
	beforeErr, afterErr error
	// afterErrAt is the index in after of the statement afterErr is
	// from; commitTag is the last after statement's command tag.
	afterErrAt int
	commitTag  pgconn.CommandTag
}

// guardedSQLState is the error of a guarded UPDATE that changed no row:
// division_by_zero, which nothing else in it can raise.
const guardedSQLState = "22012"

// guarded wraps the UPDATE stmt (with no RETURNING of its own) so that it
// returns how many rows it changed, and fails when none.
func guarded(stmt string) string {
	return "WITH changed AS (\n" + stmt + "\nRETURNING 1)\nSELECT count(*), 1 / count(*) FROM changed"
}

// guardedRow wraps the UPDATE stmt, which returns the row it changed
// (RETURNING), so that it returns that row as it is, and fails when it
// changed none: the division is g's one column, which the join needs,
// so the server computes it before it can answer anything.
func guardedRow(stmt string) string {
	return "WITH changed AS (\n" + stmt + "\n)\nSELECT changed.* FROM (SELECT 1 / count(*) AS one FROM changed) AS g LEFT JOIN changed ON g.one = 1"
}

func (p *pair) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.used {
		return p.tx.Exec(ctx, sql, args...)
	}
	p.used = true
	if !p.guard {
		s, err := p.send(ctx, sql, args)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		tag, err := s.exec()
		return tag, p.finish(s, err)
	}
	s, err := p.send(ctx, guarded(sql), args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
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
		// No row changed; the server skipped after. Ending the batch
		// reports the guard's error again: it is the answer, not a fault
		// (a broken connection shows in Mutate's rollback, which follows).
		_ = s.close()
		return pgconn.NewCommandTag("UPDATE 0"), nil
	}
	return pgconn.NewCommandTag("UPDATE " + strconv.FormatInt(n, 10)), p.finish(s, err)
}

func (p *pair) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.used {
		return p.tx.QueryRow(ctx, sql, args...)
	}
	p.used = true
	if p.guard {
		sql = guardedRow(sql)
	}
	s, err := p.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return &pairRow{p: p, s: s}
}

// Query is not batched: before runs first on its own.
func (p *pair) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !p.used {
		p.used = true
		for _, stmt := range p.before {
			if _, err := p.tx.Exec(ctx, stmt); err != nil {
				p.beforeErr = err
				return nil, err
			}
		}
		if len(p.after) > 0 {
			return nil, errors.New("pgxv5: a batched step ends with a query")
		}
	}
	return p.tx.Query(ctx, sql, args...)
}

// send sends before, sql and after as one batch and reads before's result.
func (p *pair) send(ctx context.Context, sql string, args []any) (sent, error) {
	// The pipeline goes to the connection under tx: check first, without
	// a round trip, that tx is still open (an empty batch fails with
	// pgx.ErrTxClosed when it is not, and sends nothing; the driver's own
	// transaction says so itself, and may not have sent its BEGIN yet).
	var sender interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	} = p.tx
	if d, ok := p.tx.(*deferredTx); ok {
		if d.closed {
			p.beforeErr = pgx.ErrTxClosed
			return nil, pgx.ErrTxClosed
		}
		if d.inner == nil {
			sender = d.conn
		}
	} else if err := p.tx.SendBatch(ctx, &pgx.Batch{}).Close(); err != nil {
		p.beforeErr = err
		return nil, err
	}
	var (
		s   sent
		err error
	)
	if p.mode == batchPipeline {
		s, err = sendPipeline(ctx, p.tx.Conn(), p.before, sql, args, p.after)
	} else {
		s = sendBatch(ctx, sender, p.before, sql, args, p.after)
	}
	if err != nil {
		// Nothing was sent (the statement did not prepare).
		p.beforeErr = err
		return nil, err
	}
	for range p.before {
		if _, err := s.exec(); err != nil {
			// The savepoint was not set when the server refused it (or
			// the BEGIN before it), or when nothing was sent (ctx was
			// already done, the connection closed). Any other error leaves
			// it unknown: report it as the step's (driver.Batcher).
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) || pgconn.SafeToRetry(err) {
				p.beforeErr = err
			}
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// finish reads after's result, if the statement succeeded, and ends the
// batch; it returns the statement's error, or the end's.
func (p *pair) finish(s sent, err error) error {
	if err == nil {
		for i := range p.after {
			p.commitTag, p.afterErr = s.exec()
			if p.afterErr != nil {
				p.afterErrAt = i
				break
			}
		}
	}
	cerr := s.close()
	if err == nil && p.afterErr == nil {
		err = cerr
		if err != nil && len(p.after) > 0 {
			// The end of the batch failed (the connection broke): the
			// after statements' outcome is unknown.
			p.afterErr, p.afterErrAt = err, len(p.after)-1
		}
	}
	return err
}

// pairRow is the row of a batched QueryRow; Scan ends the batch.
type pairRow struct {
	p *pair
	s sent
}

func (r *pairRow) Scan(dest ...any) error {
	rows := r.s.rows()
	var err error
	if rows.Next() {
		err = rows.Scan(dest...)
	} else {
		err = pgx.ErrNoRows
	}
	rows.Close()
	if rerr := rows.Err(); rerr != nil {
		err = rerr
	}
	if pgErr := (*pgconn.PgError)(nil); r.p.guard && errors.As(err, &pgErr) && pgErr.Code == guardedSQLState {
		// No row changed; the server skipped after (see pair.Exec).
		_ = r.s.close()
		return pgx.ErrNoRows
	}
	return r.p.finish(r.s, err)
}

// errRow is a pgx.Row that fails.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// sent is a batch on its way: the results in order, then close.
type sent interface {
	exec() (pgconn.CommandTag, error)
	rows() pgx.Rows
	close() error
}

// batchSent is a pgx.Batch's results.
type batchSent struct{ br pgx.BatchResults }

func sendBatch(ctx context.Context, tx interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, before []string, sql string, args []any, after []string) sent {
	b := &pgx.Batch{}
	for _, stmt := range before {
		b.Queue(stmt)
	}
	b.Queue(sql, args...)
	for _, stmt := range after {
		b.Queue(stmt)
	}
	return batchSent{tx.SendBatch(ctx, b)}
}

func (s batchSent) exec() (pgconn.CommandTag, error) { return s.br.Exec() }
func (s batchSent) rows() pgx.Rows {
	rows, _ := s.br.Query() // a failed Query's rows hold its error
	return rows
}
func (s batchSent) close() error { return s.br.Close() }

// pipelineSent is a pgconn pipeline's results.
type pipelineSent struct {
	p       *pgconn.Pipeline
	typeMap *pgtype.Map
	err     error // the first error read
}

func sendPipeline(ctx context.Context, conn *pgx.Conn, before []string, sql string, args []any, after []string) (sent, error) {
	// Prepared once per connection under a name derived from sql; later
	// calls find it without a round trip.
	sd, err := conn.Prepare(ctx, sql, sql)
	if err != nil {
		return nil, err
	}
	var eqb pgx.ExtendedQueryBuilder
	if err := eqb.Build(conn.TypeMap(), sd, args); err != nil {
		return nil, err
	}
	pl := conn.PgConn().StartPipeline(ctx)
	for _, stmt := range before {
		pl.SendQueryParams(stmt, nil, nil, nil, nil)
	}
	pl.SendQueryStatement(sd, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
	for _, stmt := range after {
		pl.SendQueryParams(stmt, nil, nil, nil, nil)
	}
	s := &pipelineSent{p: pl, typeMap: conn.TypeMap()}
	if err := pl.Sync(); err != nil {
		// The connection is closed; the results say so.
		s.err = err
	}
	return s, nil
}

// next returns the next statement's result reader.
func (s *pipelineSent) next() (*pgconn.ResultReader, error) {
	if s.err != nil {
		return nil, s.err
	}
	r, err := s.p.GetResults()
	if err == nil {
		rr, ok := r.(*pgconn.ResultReader)
		if ok {
			return rr, nil
		}
		err = fmt.Errorf("pgxv5: unexpected pipeline result %T", r)
	}
	s.err = err
	return nil, err
}

func (s *pipelineSent) exec() (pgconn.CommandTag, error) {
	rr, err := s.next()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	if err != nil {
		s.err = err
	}
	return tag, err
}

func (s *pipelineSent) rows() pgx.Rows {
	rr, err := s.next()
	if err != nil {
		return errRows{err: err}
	}
	return pgx.RowsFromResultReader(s.typeMap, rr)
}

// close reads what is left, up to the Sync, and gives the connection back
// to pgx; after an error the server skipped the rest.
func (s *pipelineSent) close() error {
	err := s.p.Close()
	if s.err != nil {
		return s.err
	}
	return err
}

// errRows is the pgx.Rows of a result that could not be read.
type errRows struct {
	pgx.Rows // never reached: every method used is below
	err      error
}

func (r errRows) Next() bool                    { return false }
func (r errRows) Scan(...any) error             { return r.err }
func (r errRows) Close()                        {}
func (r errRows) Err() error                    { return r.err }
func (r errRows) CommandTag() pgconn.CommandTag { return pgconn.CommandTag{} }
