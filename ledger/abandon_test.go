package ledger

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
)

// TestAbandon checks the cleanup of a claim cut short (Claim's abandon) on
// both engines: it ends the lease of the token it is given and nothing
// else, the record keeps its fence, and a retry with the same fingerprint
// takes it over at once while another fingerprint is refused as for any
// in-flight record. The driver-level path that calls it (a write that
// commits behind a cancelled context) is TestFaultCancelAfterEachStatement.
func TestAbandon(t *testing.T) { testdb.Each(t, testAbandon[*sql.Tx], testAbandon[pgx.Tx]) }

func testAbandon[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	{
		ctx := context.Background()
		now := time.UnixMilli(1_800_000_000_000).UTC()
		l, err := New(d.Driver, Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Scope: "s", Key: "k", Fingerprint: hash.Bytes([]byte("p"))}
		other := Request{Scope: "s", Key: "k", Fingerprint: hash.Bytes([]byte("q"))}
		abandon := func(token string) {
			t.Helper()
			l.abandon(ctx, l.db, driver.ClaimParams{Scope: req.Scope, Key: req.Key, Token: token})
		}

		c1, err := l.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		abandon("not-the-token")
		if _, err := l.Claim(ctx, req); !errors.Is(err, ErrInFlight) {
			t.Fatalf("claim after abandoning another token = %v, want ErrInFlight", err)
		}

		abandon(c1.Token)
		r, err := l.Get(ctx, "s", "k")
		if err != nil {
			t.Fatal(err)
		}
		if r.State != StateInFlight || r.Fence != 1 || !r.LeaseExpiresAt.Equal(r.CreatedAt) {
			t.Fatalf("abandoned record = %v fence %d, lease until %v, created %v; want in flight, fence 1, lease ended at creation",
				r.State, r.Fence, r.LeaseExpiresAt, r.CreatedAt)
		}
		if _, err := l.Claim(ctx, other); !errors.Is(err, ErrKeyReused) {
			t.Fatalf("claim with another fingerprint = %v, want ErrKeyReused", err)
		}
		c2, err := l.Claim(ctx, req)
		if err != nil || c2.Replayed() || c2.Fence != 2 {
			t.Fatalf("retry = %+v, %v; want a lease with fence 2", c2, err)
		}
		if err := l.Complete(ctx, c1, Outcome{Status: 200}); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("Complete by the abandoned claim = %v, want ErrLeaseLost", err)
		}

		// A takeover abandoned in turn keeps its fence too.
		abandon(c2.Token)
		c3, err := l.Claim(ctx, req)
		if err != nil || c3.Fence != 3 {
			t.Fatalf("retry after an abandoned takeover = %+v, %v; want fence 3", c3, err)
		}
		// Abandoning a completed record's old token changes nothing.
		if err := l.Complete(ctx, c3, Outcome{Status: 201}); err != nil {
			t.Fatal(err)
		}
		abandon(c3.Token)
		if c, err := l.Claim(ctx, req); err != nil || !c.Replayed() || c.Replay.Outcome.Status != 201 {
			t.Fatalf("claim after completion = %+v, %v; want the replay of 201", c, err)
		}
	}
}
