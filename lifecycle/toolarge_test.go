package lifecycle_test

import (
	"bytes"
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TestTooLargeKeepsMarker: an answer the store refuses as too large (an
// engine's limit, such as MySQL's max_allowed_packet) is replaced by a
// marker, so that every retry is told the answer is lost, with its status,
// and the handler never runs again.
func TestTooLargeKeepsMarker(t *testing.T) {
	testdb.Each(t, testTooLargeKeepsMarker[*sql.Tx], testTooLargeKeepsMarker[pgx.Tx])
}

func testTooLargeKeepsMarker[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	limit := d.OutcomeLimit(t) // before the ledger prepares its statements
	clk := &clock{now: t0}
	l := newLedger(t, d, ledger.Options{TTL: time.Hour, Lease: lease, Now: clk.Now})
	ctx := context.Background()
	var ev events
	first := lifecycle.Decide(ctx, l, request("big", "a"), lifecycle.Config{Emit: ev.emit})
	if first.Verdict != lifecycle.Claimed {
		t.Fatalf("first request: %+v", summary(first))
	}
	first.Run.Stop()
	first.Run.Complete(ledger.Outcome{Kind: "test", Status: 201, Body: bytes.Repeat([]byte("x"), int(limit))}, "", 201, nil)
	if got, want := ev.take(), []string{"claimed", "stored"}; !slices.Equal(got, want) {
		t.Errorf("run's events %v, want %v", got, want)
	}
	clk.Advance(2 * lease)
	for i := range 2 {
		d := lifecycle.Decide(ctx, l, request("big", "a"), lifecycle.Config{})
		if d.Run != nil {
			d.Run.Stop()
		}
		ref := d.Refusal
		if d.Verdict != lifecycle.Refused || ref.Why != lifecycle.NotStored || ref.Reason != ledger.ReasonOversized || ref.Status != 201 {
			t.Errorf("retry %d: %+v %+v, want NotStored, oversized, status 201", i+1, summary(d), ref)
		}
	}
}
