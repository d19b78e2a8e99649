package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/mysqldb"
)

// Claim claims a key in up to four statements, since MySQL has no UPDATE
// ... RETURNING and no conditional upsert that reports what it did:
//
//  1. A plain read of the row with the server's clock (the clock alone
//     when the key has no row). When the row stands (a replay, an
//     in-flight answer, a reused key), that is the answer: no lock is
//     taken and nothing is written.
//  2. For a key without a row, an INSERT, its lease counted from the
//     read's clock. It wins, or fails with a
//     duplicate-key error when another claim inserted first (waiting
//     first, when that claim's transaction has not ended).
//  3. Otherwise a locking read (LOCK IN SHARE MODE, then FOR UPDATE only
//     for a takeover: see takeOver), which sees the latest committed row
//     whatever the transaction's snapshot, and
//  4. when that row may still be taken over (driver.MayTakeOver), the
//     takeover, while the lock keeps every other claim out.
//
// Inside a caller's transaction under REPEATABLE READ, the plain read
// sees the transaction's snapshot, which may be older than the row: a row
// that stands there stood at the snapshot and, being judged at the clock
// read after it, still does (a completed record does not change before it
// expires, a live lease is at worst reported in flight a little longer);
// a row missing there is found by step 2's duplicate-key error, and step 3
// reads past the snapshot. A waiting duplicate therefore replays the first
// outcome once it commits, and claims the key once it rolls back.
//
// On the pool, steps 3 and 4 run in a transaction of their own; inside a
// caller's transaction the lock of step 3 lasts until that transaction
// ends, also when the row stood after all.
//
// ClaimParams.ValidUntil is checked against the clock of step 1 and, by
// the server, in the statements that write (steps 2 and 4): a claim whose
// write arrives late wins nothing. The COMMIT of a takeover on the pool
// carries no such check: a claim held up between its takeover and its
// COMMIT may still win after its caller gave up, and the lease ends it
// (or the ledger's Abandon, once the connection answers).
func (e executor) Claim(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	if e.tx != nil {
		return e.claim(ctx, a)
	}
	return onPool(func() (idriver.ClaimResult, error) { return e.claim(ctx, a) })
}

func (e executor) claim(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	r, now, err := e.read(ctx, a)
	if err != nil || (r != nil && !idriver.MayTakeOver(r, a, now)) {
		return idriver.ClaimResult{Now: now, Row: r}, err
	}
	return e.write(ctx, a, r, now)
}

// read is step 1 of Claim: the key's row (nil when none) and the server's
// clock of the same statement (queries/mysql, Get), which a miss carries
// too, so that a new lease counts from it.
func (e executor) read(ctx context.Context, a idriver.ClaimParams) (*idriver.Row, int64, error) {
	g, err := e.q().Get(ctx, mysqldb.GetParams{Scope: []byte(a.Scope), IdempotencyKey: []byte(a.Key)})
	if err != nil {
		return nil, 0, err
	}
	r, err := found(g)
	if err != nil {
		return nil, 0, err
	}
	return r, at(a.Now, g.Now), nil
}

// write is the rest of Claim, after a read that found no row (r nil) or one
// that may be taken over, at now.
func (e executor) write(ctx context.Context, a idriver.ClaimParams, r *idriver.Row, now int64) (idriver.ClaimResult, error) {
	if late(a, now) {
		return idriver.ClaimResult{Late: true, Now: now}, nil
	}
	if r == nil {
		n, err := e.insert(ctx, a, now)
		if err == nil && n == 0 {
			// Received after ValidUntil (nothing else makes it insert
			// nothing): the server's clock is past it.
			return idriver.ClaimResult{Late: true, Now: a.ValidUntil + 1}, nil
		}
		if err == nil {
			return idriver.ClaimResult{Won: true, Fence: 1, LeaseExpiresAt: now + a.LeaseMillis}, nil
		}
		if !isDuplicate(err) {
			return idriver.ClaimResult{}, err
		}
	}
	if e.tx != nil {
		return e.takeOver(ctx, a, true)
	}
	return e.takeOverOnPool(ctx, a)
}

// insert is step 2 of Claim: the new row, its lease counted from now. With
// no valid_until for the server to check (Mutate's claims, and those that
// bring their own clock), it is a plain INSERT ... VALUES, the cheaper
// statement for the server; otherwise the INSERT ... SELECT that checks it.
func (e executor) insert(ctx context.Context, a idriver.ClaimParams, now int64) (int64, error) {
	until := validUntil(a)
	if !until.Valid {
		return e.q().ClaimInsertValues(ctx, mysqldb.ClaimInsertValuesParams{
			Scope: []byte(a.Scope), IdempotencyKey: []byte(a.Key), Fingerprint: a.Fingerprint,
			LeaseToken:     token(a.Token),
			LeaseExpiresAt: sql.NullInt64{Int64: now + a.LeaseMillis, Valid: true},
			CreatedAt:      now, ExpiresAt: now + a.TTLMillis,
		})
	}
	return e.q().ClaimInsert(ctx, mysqldb.ClaimInsertParams{
		Scope: []byte(a.Scope), IdempotencyKey: []byte(a.Key), Fingerprint: a.Fingerprint,
		LeaseToken:     token(a.Token),
		LeaseExpiresAt: sql.NullInt64{Int64: now + a.LeaseMillis, Valid: true},
		CreatedAt:      now, ExpiresAt: now + a.TTLMillis,
		ValidUntil: until,
	})
}

// SavepointClaim is Claim with SAVEPOINT name set between its read and its
// write (driver.Batcher): a row that stands is answered from the read
// alone, with no savepoint set (saved false), so that a replay inside a
// caller's transaction costs one round trip instead of three (SAVEPOINT,
// the read, RELEASE). The read writes nothing and locks nothing, so it
// needs no savepoint around it.
func (e executor) SavepointClaim(ctx context.Context, name string, a idriver.ClaimParams) (idriver.ClaimResult, bool, error) {
	if e.tx == nil {
		return idriver.ClaimResult{}, false, errNoTx
	}
	r, now, err := e.read(ctx, a)
	if err != nil || (r != nil && !idriver.MayTakeOver(r, a, now)) {
		return idriver.ClaimResult{Now: now, Row: r}, false, err
	}
	if err := e.Savepoint(ctx, name); err != nil {
		return idriver.ClaimResult{}, false, err
	}
	res, err := e.write(ctx, a, r, now)
	return res, true, err
}

// CompleteRelease runs Complete and, when it stored the outcome, RELEASE
// SAVEPOINT name (driver.Batcher), one round trip each: without the DSN's
// multiStatements, go-sql-driver sends one statement at a time.
func (e executor) CompleteRelease(ctx context.Context, p idriver.CompleteParams, name string) (res idriver.CompleteResult, released bool, err error) {
	if e.tx == nil {
		return res, false, errNoTx
	}
	if res, err = e.complete(ctx, p, false); err != nil || !res.OK {
		return res, false, err
	}
	err = e.ReleaseSavepoint(ctx, name)
	return res, err == nil, err
}

// CompleteReleaseCommit stores the outcome and, when the lease held,
// commits: the COMMIT releases the savepoint with the transaction, so no
// RELEASE is sent (one round trip fewer; database/sql sends one statement
// at a time, so there is nothing to batch).
func (e executor) CompleteReleaseCommit(ctx context.Context, p idriver.CompleteParams, name string) (res idriver.CompleteResult, released, committed bool, err error) {
	if e.tx == nil {
		return res, false, false, errNoTx
	}
	// The transaction ends here, so the statement may report its times
	// through the session (see complete).
	if res, err = e.complete(ctx, p, true); err != nil || !res.OK {
		return res, false, false, err
	}
	if err := e.tx.Commit(); err != nil {
		return res, true, false, err
	}
	return res, true, true, nil
}

// takeOverOnPool is takeOver in a transaction of the driver's own.
func (e executor) takeOverOnPool(ctx context.Context, a idriver.ClaimParams) (idriver.ClaimResult, error) {
	tx, err := e.pool.BeginTx(ctx, nil)
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	res, err := executor{d: e.d, db: tx, tx: tx, own: new(owner), bound: true}.takeOver(ctx, a, false)
	if err != nil {
		_ = tx.Rollback()
		return idriver.ClaimResult{}, err
	}
	// A COMMIT whose reply is lost leaves a won takeover unknown: the
	// error is marked as such (interpret), and the ledger ends the lease
	// it may have taken (Abandon).
	if err := tx.Commit(); err != nil {
		return idriver.ClaimResult{}, err
	}
	return res, nil
}

// takeOver is steps 3 and 4 of Claim, inside e's transaction. In a
// caller's transaction (shared) the row is read under a shared lock first:
// every duplicate that waited there for the same first request holds one
// already (InnoDB's duplicate-key check takes it, until the transaction
// ends), so a row that stands, the common case (the first request
// completed), is answered without a lock that conflicts with theirs. Only a
// row that may be taken over is read again for update; two takeovers that
// race there may deadlock, and one of them fails retryable. On the pool
// the duplicate-key check's lock ended with its statement, and the row is
// read for update at once.
func (e executor) takeOver(ctx context.Context, a idriver.ClaimParams, shared bool) (idriver.ClaimResult, error) {
	key := mysqldb.GetSharedParams{Scope: []byte(a.Scope), IdempotencyKey: []byte(a.Key)}
	var g mysqldb.IdempotencyLedger
	var err error
	if shared {
		if g, err = e.q().GetShared(ctx, key); err == nil {
			var now int64
			if now, err = e.clock(ctx, a.Now); err != nil {
				return idriver.ClaimResult{}, err
			}
			if r := row(g); !idriver.MayTakeOver(&r, a, now) {
				return idriver.ClaimResult{Now: now, Row: &r}, nil
			}
			g, err = e.q().GetForUpdate(ctx, mysqldb.GetForUpdateParams(key))
		}
	} else {
		g, err = e.q().GetForUpdate(ctx, mysqldb.GetForUpdateParams(key))
	}
	if errors.Is(err, sql.ErrNoRows) {
		// The row went (purged) since it stood in the way: the
		// ledger reads again and starts over.
		now, err := e.clock(ctx, a.Now)
		return idriver.ClaimResult{Now: now}, err
	}
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	now, err := e.clock(ctx, a.Now)
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	r := row(g)
	if !idriver.MayTakeOver(&r, a, now) {
		return idriver.ClaimResult{Now: now, Row: &r}, nil
	}
	if late(a, now) {
		return idriver.ClaimResult{Late: true, Now: now}, nil
	}
	// An expired record starts afresh; a recovery keeps the commit mark.
	var committed sql.NullInt64
	if r.CommittedAt != 0 && !idriver.Expired(&r, now) {
		committed = sql.NullInt64{Int64: r.CommittedAt, Valid: true}
	}
	failures := idriver.TakeoverFailures(&r, a, now)
	n, err := e.q().ClaimTakeover(ctx, mysqldb.ClaimTakeoverParams{
		Fingerprint:    a.Fingerprint,
		LeaseToken:     token(a.Token),
		LeaseExpiresAt: sql.NullInt64{Int64: now + a.LeaseMillis, Valid: true},
		NewFence:       r.Fence + 1,
		CreatedAt:      now,
		ExpiresAt:      now + a.TTLMillis,
		CommittedAt:    committed,
		Failures:       failures,
		Scope:          []byte(a.Scope), IdempotencyKey: []byte(a.Key), Fence: r.Fence,
		ValidUntil: validUntil(a),
	})
	if err != nil {
		return idriver.ClaimResult{}, err
	}
	if n != 1 {
		// The row is locked: only a statement received after ValidUntil
		// changes nothing. Should it happen otherwise, the ledger reads
		// again and starts over.
		if validUntil(a).Valid {
			return idriver.ClaimResult{Late: true, Now: max(now, a.ValidUntil+1)}, nil
		}
		return idriver.ClaimResult{Now: now}, nil
	}
	if idriver.Expired(&r, now) || !bytes.Equal(r.Fingerprint, a.Fingerprint) {
		// A new operation (the cases in which failures start again at
		// 0): the steps of the operations before end with the takeover,
		// in its transaction, so that neither this operation nor its
		// retries resume them. The row read under its lock is the one
		// taken over.
		if _, err := e.q().StepsEnd(ctx, mysqldb.StepsEndParams{Scope: []byte(a.Scope), IdempotencyKey: []byte(a.Key)}); err != nil {
			return idriver.ClaimResult{}, err
		}
	}
	return idriver.ClaimResult{Won: true, Fence: r.Fence + 1, LeaseExpiresAt: now + a.LeaseMillis, CommittedAt: committed.Int64, Failures: failures}, nil
}

// late reports whether a claim's write at now (the server's clock, or the
// claim's own Now) comes after its ValidUntil.
func late(a idriver.ClaimParams, now int64) bool { return a.ValidUntil != 0 && now > a.ValidUntil }

// validUntil is the valid_until argument of a claim's writes, which the
// server compares with its clock: NULL when there is no bound, or when
// the claim brings its own clock (Now), which Go compares instead (late).
func validUntil(a idriver.ClaimParams) sql.NullInt64 {
	return sql.NullInt64{Int64: a.ValidUntil, Valid: a.ValidUntil != 0 && a.Now == 0}
}

// poolDeadlockAttempts bounds the tries of a statement on the pool that
// deadlocked.
const poolDeadlockAttempts = 5

// onPool runs f, a statement or a transaction of the driver's own on the
// pool, again when it deadlocked: InnoDB rolled back nothing but f's own
// work (an autocommit statement, or the driver's transaction), so a new
// try is safe, and the caller never sees a deadlock it could do nothing
// about but retry. Inside a caller's transaction a deadlock rolled the
// whole transaction back, and only the caller can run it again
// (ledger.ErrRetryable).
func onPool[T any](f func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := f()
		if err == nil || attempt == poolDeadlockAttempts || !isDeadlock(err) {
			return v, err
		}
	}
}
