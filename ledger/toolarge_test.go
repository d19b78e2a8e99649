package ledger_test

import (
	"bytes"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// TestOutcomeTooLarge stores, on every driver, an outcome over the
// engine's limit (SQLite's length limit, lowered to 1 MiB on the
// connection; the PostgreSQL drivers' check of the server's 1 GB field,
// lowered alike; MySQL's max_allowed_packet as the server has it, 16 MiB
// here): Complete must return an *OutcomeTooLargeError with the limit,
// store nothing and keep the lease, so that its holder stores a small
// marker with a second Complete, which a retry then replays.
func TestOutcomeTooLarge(t *testing.T) {
	testdb.Each(t, testOutcomeTooLarge[*sql.Tx], testOutcomeTooLarge[pgx.Tx])
}

func testOutcomeTooLarge[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	limit := d.OutcomeLimit(t) // before the ledger prepares its statements
	b := setupOn(t, d)
	r := req("too-large", "p")
	c := b.claim(t, r)

	big := ledger.Outcome{Status: 201, Body: bytes.Repeat([]byte("x"), int(limit)),
		Header: map[string][]string{"Content-Type": {"application/octet-stream"}}}
	err := b.l.Complete(b.ctx, c, big)
	var tl *ledger.OutcomeTooLargeError
	if !errors.Is(err, ledger.ErrOutcomeTooLarge) || !errors.As(err, &tl) {
		t.Fatalf("Complete of %d bytes = %v, want an *OutcomeTooLargeError", limit, err)
	}
	if tl.Limit != limit || tl.Size <= limit {
		t.Errorf("error %+v: want Limit %d and a Size above it", tl, limit)
	}
	if rec := b.get(t, r.Key); rec.State != ledger.StateInFlight || rec.Fence != c.Fence || rec.Outcome.Status != 0 || rec.Outcome.Body != nil {
		t.Fatalf("record after the refusal: %+v, want in flight under fence %d, no outcome", rec, c.Fence)
	}

	marker := ledger.Outcome{Kind: "marker", Status: 410, Body: []byte("answer not kept")}
	if err := b.l.Complete(b.ctx, c, marker); err != nil {
		t.Fatalf("Complete of the marker after the refusal: %v; the lease should still hold", err)
	}
	b.clock.Advance(2 * time.Minute) // past the lease: a retry is still a replay
	again := b.claim(t, r)
	if !again.Replayed() || again.Replay.Outcome.Kind != "marker" || again.Replay.Outcome.Status != 410 ||
		string(again.Replay.Outcome.Body) != "answer not kept" {
		t.Fatalf("retry: %+v, want the replay of the marker", again)
	}
}
