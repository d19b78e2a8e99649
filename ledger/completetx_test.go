package ledger_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

func TestCompleteTx(t *testing.T) { eachDriver(t, testCompleteTx[*sql.Tx], testCompleteTx[pgx.Tx]) }

// testCompleteTx: an outcome stored with CompleteTx commits or vanishes
// with the caller's own writes in the same transaction; after a rollback
// the lease still holds, so the claim can be completed again.
func testCompleteTx[TTx any](t *testing.T, b *bundle[TTx]) {
	r := req("k", "pay 10")
	c := b.claim(t, r)

	tx := b.begin(t)
	if _, err := b.insertOrder(b.ctx, tx, "widget"); err != nil {
		t.Fatal(err)
	}
	if err := b.l.CompleteTx(b.ctx, tx, c, ledger.Outcome{Status: 201, Body: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	b.rollback(t, tx)
	if got := b.get(t, "k"); got.State != ledger.StateInFlight || b.count(t, "orders") != 0 {
		t.Fatalf("after rollback: state %v, %d orders; want in flight and 0", got.State, b.count(t, "orders"))
	}

	tx = b.begin(t)
	if _, err := b.insertOrder(b.ctx, tx, "widget"); err != nil {
		t.Fatal(err)
	}
	if err := b.l.CompleteTx(b.ctx, tx, c, ledger.Outcome{Status: 201, Body: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	b.commit(t, tx)
	got := b.get(t, "k")
	if got.State != ledger.StateCompleted || string(got.Outcome.Body) != "second" || b.count(t, "orders") != 1 {
		t.Fatalf("after commit: state %v body %q, %d orders; want completed, second, 1", got.State, got.Outcome.Body, b.count(t, "orders"))
	}
	again, err := b.l.Claim(b.ctx, r)
	if err != nil || !again.Replayed() || string(again.Replay.Outcome.Body) != "second" {
		t.Fatalf("retry: %+v, %v; want a replay of second", again, err)
	}
}
