package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// The tests below are of what sending Mutate's statements in batches (the
// pgxv5 driver's SAVEPOINT with the claim, outcome with RELEASE) could
// break; they run on every driver, batched or not, and must read the same.

// TestMutateSavepointFails ends the transaction block under tx behind the
// driver's back (a raw COMMIT), so that Mutate's SAVEPOINT, the first
// statement of its first batch, fails on PostgreSQL (SQLSTATE 25P01): the
// claim sent with it must not run (it would run, and commit, on its own
// outside any transaction block), and the error is the savepoint's.
func TestMutateSavepointFails(t *testing.T) {
	eachDriver(t, testMutateSavepointFails[*sql.Tx], testMutateSavepointFails[pgx.Tx])
}

func testMutateSavepointFails[TTx any](t *testing.T, b *bundle[TTx]) {
	if does := b.d.Eng.SavepointOutsideTx; does != "" {
		t.Skip(does + ": it never fails so")
	}
	tx := b.begin(t)
	defer b.l.Driver().Rollback(b.ctx, tx)
	if err := b.exec(b.ctx, tx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
	const want = "ledger: mutate: ERROR: SAVEPOINT can only be used in transaction blocks (SQLSTATE 25P01)"
	if err == nil || err.Error() != want {
		t.Fatalf("Mutate error %v; want %q", err, want)
	}
	if runs != 0 {
		t.Errorf("fn ran %d times; want 0", runs)
	}
	if n := b.count(t, "idempotency_ledger"); n != 0 {
		t.Errorf("%d ledger rows; want 0: the claim ran without its savepoint", n)
	}
}

// TestMutateClaimFails makes the claim, the second statement of the first
// batch, fail after the savepoint was set (a trigger refuses the key):
// Mutate rolls back to the savepoint, and the caller's transaction, with
// its write from before Mutate, stays usable and commits.
func TestMutateClaimFails(t *testing.T) {
	eachDriver(t, testMutateClaimFails[*sql.Tx], testMutateClaimFails[pgx.Tx])
}

func testMutateClaimFails[TTx any](t *testing.T, b *bundle[TTx]) {
	// A trigger, the engine's way, refuses the key "refused".
	if len(b.d.Eng.RefuseKey) == 0 {
		t.Fatalf("the %s engine's testdb entry has no RefuseKey trigger", b.d.Engine)
	}
	for _, stmt := range b.d.Eng.RefuseKey {
		if _, err := b.db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	runs := 0
	b.inTx(t, func(tx TTx) {
		if _, err := b.insertOrder(b.ctx, tx, "before"); err != nil {
			t.Fatal(err)
		}
		_, err := ledger.Mutate(b.ctx, b.l, tx, req("refused", "p"), placeOrder(b, tx, "book", &runs))
		if err == nil || !strings.HasPrefix(err.Error(), "ledger: claim: ") || !strings.Contains(err.Error(), "refused key") ||
			strings.Contains(err.Error(), "rollback:") {
			t.Fatalf("Mutate error %v; want the claim's, rolled back", err)
		}
		// The transaction is usable: the savepoint was rolled back.
		if _, err := b.insertOrder(b.ctx, tx, "after"); err != nil {
			t.Fatalf("insert after the failed claim: %v", err)
		}
	})
	if runs != 0 {
		t.Errorf("fn ran %d times; want 0", runs)
	}
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 0 || m != 2 {
		t.Errorf("%d ledger rows, %d orders; want 0 and 2", n, m)
	}
}

// TestMutateLeaseLostInTx has fn take the lease away through tx (it
// rewrites the ledger row's token): the outcome's write then finds no
// lease, so the RELEASE batched behind it must not run, and Mutate rolls
// back to the savepoint: ErrLeaseLost, fn's order gone, the caller's
// earlier write kept.
func TestMutateLeaseLostInTx(t *testing.T) {
	eachDriver(t, testMutateLeaseLostInTx[*sql.Tx], testMutateLeaseLostInTx[pgx.Tx])
}

func testMutateLeaseLostInTx[TTx any](t *testing.T, b *bundle[TTx]) {
	b.inTx(t, func(tx TTx) {
		if _, err := b.insertOrder(b.ctx, tx, "before"); err != nil {
			t.Fatal(err)
		}
		_, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(ctx context.Context) (order, error) {
			o, err := placeOrder(b, tx, "book", nil)(ctx)
			if err != nil {
				return o, err
			}
			return o, b.exec(ctx, tx, `UPDATE idempotency_ledger SET lease_token = 'stolen' WHERE "key" = $1`, "k")
		})
		if err != ledger.ErrLeaseLost {
			t.Fatalf("Mutate error %v; want ErrLeaseLost", err)
		}
	})
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 0 || m != 1 {
		t.Errorf("%d ledger rows, %d orders; want 0 and 1 (the write before Mutate)", n, m)
	}
}

// TestMutateCancelledMidBatch cancels ctx while the claim, sent with the
// savepoint, waits for the row lock of a concurrent first execution of
// the same key: Mutate reports the cancellation, fn never runs, and
// nothing of it is ever committed.
func TestMutateCancelledMidBatch(t *testing.T) {
	eachDriver(t, testMutateCancelledMidBatch[*sql.Tx], testMutateCancelledMidBatch[pgx.Tx])
}

func testMutateCancelledMidBatch[TTx any](t *testing.T, b *bundle[TTx]) {
	if b.l.Driver().BeginLocks() {
		t.Skip("a transaction holds the write lock from BEGIN: its claim never waits")
	}
	// The holder: a first execution of "k" that stays inside fn until
	// told, then fails, so that its claim vanishes.
	inside, finish := make(chan struct{}), make(chan struct{})
	var finishOnce sync.Once
	release := func() { finishOnce.Do(func() { close(finish) }) }
	defer release() // a failing test must not leave the holder waiting
	holder := make(chan error, 1)
	go func() {
		tx, err := b.l.Driver().Begin(b.ctx)
		if err != nil {
			close(inside)
			holder <- err
			return
		}
		defer b.l.Driver().Rollback(b.ctx, tx)
		_, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(context.Context) (order, error) {
			close(inside)
			<-finish
			return order{}, errors.New("holder gives up")
		})
		holder <- err
	}()
	<-inside

	tx := b.begin(t)
	defer b.l.Driver().Rollback(b.ctx, tx)
	var pid int64
	if err := b.exec(b.ctx, tx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	probe := b.d.Eng.LockWait // the session's id, and whether it waits for a row lock
	if probe == nil {
		t.Fatalf("the %s engine's testdb entry has no LockWait probe", b.d.Engine)
	}
	pid, err := b.d.QueryInt(b.ctx, tx, probe.Session)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	go func() {
		// Cancel once the claim waits for the holder's row lock.
		for {
			var waiting bool
			err := b.db.QueryRow(probe.Waiting, pid).Scan(&waiting)
			if err != nil || waiting {
				break
			}
			// InnoDB refreshes what information_schema.INNODB_TRX shows
			// only when it was not read for 0.1 s.
			time.Sleep(150 * time.Millisecond)
		}
		cancel()
	}()
	runs := 0
	_, err = ledger.Mutate(ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Mutate error %v; want one matching context.Canceled", err)
	}
	if runs != 0 {
		t.Errorf("fn ran %d times; want 0", runs)
	}
	_ = b.l.Driver().Commit(b.ctx, tx) // fails on a connection the cancellation closed; commits nothing either way
	release()
	if err := <-holder; err == nil || err.Error() != "holder gives up" {
		t.Fatalf("holder: %v", err)
	}
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 0 || m != 0 {
		t.Errorf("%d ledger rows, %d orders; want none", n, m)
	}
}

// TestMutateCancelledBefore calls Mutate with a context that is already
// cancelled, in a transaction whose connection has run Mutate before (its
// statements are prepared): nothing is sent, so there is no savepoint to
// roll back to, and the transaction stays usable.
func TestMutateCancelledBefore(t *testing.T) {
	eachDriver(t, testMutateCancelledBefore[*sql.Tx], testMutateCancelledBefore[pgx.Tx])
}

func testMutateCancelledBefore[TTx any](t *testing.T, b *bundle[TTx]) {
	runs := 0
	b.inTx(t, func(tx TTx) {
		if _, err := ledger.Mutate(b.ctx, b.l, tx, req("warm", "p"), placeOrder(b, tx, "warm", &runs)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		_, err := ledger.Mutate(ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "rollback:") {
			t.Fatalf("Mutate error %v; want one matching context.Canceled, with nothing to roll back", err)
		}
		if _, err := b.insertOrder(b.ctx, tx, "after"); err != nil {
			t.Fatalf("insert after the cancelled Mutate: %v", err)
		}
	})
	if runs != 1 {
		t.Errorf("fn ran %d times; want 1 (warm)", runs)
	}
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 1 || m != 2 {
		t.Errorf("%d ledger rows, %d orders; want 1 and 2", n, m)
	}
}
