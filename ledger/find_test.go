package ledger_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

func TestFindAndInFlight(t *testing.T) {
	eachDriver(t, testFindAndInFlight[*sql.Tx], testFindAndInFlight[pgx.Tx])
}

// describe lists records as "scope/key state" lines, in order.
func describe(rs []*ledger.Record) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.Scope + "/" + r.Key + " " + r.State.String() + "\n")
	}
	return b.String()
}

func testFindAndInFlight[TTx any](t *testing.T, b *bundle[TTx]) {
	claimIn := func(scope, key string) *ledger.Claim {
		t.Helper()
		c, err := b.l.Claim(b.ctx, ledger.Request{Scope: scope, Key: key, Fingerprint: fp(scope + key)})
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Millisecond) // distinct claim times, so the order is known
		return c
	}
	// "order-17" in three scopes (one completed), "order-18" in one; the
	// claims' order is the order of the calls.
	c := claimIn("tenant-b", "order-17")
	claimIn("tenant-a", "order-17")
	claimIn("", "order-17")
	claimIn("tenant-a", "order-18")
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		call  func() ([]*ledger.Record, error)
		want  string
		error bool
	}{
		{"find in every scope", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "order-17", 10) },
			"/order-17 in_flight\ntenant-a/order-17 in_flight\ntenant-b/order-17 completed\n", false},
		{"find, limited", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "order-17", 2) },
			"/order-17 in_flight\ntenant-a/order-17 in_flight\n", false},
		{"find a key with no record", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "nope", 10) }, "", false},
		{"keys match exactly", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "ORDER-17", 10) }, "", false},
		{"in flight, oldest first", func() ([]*ledger.Record, error) { return b.l.InFlight(b.ctx, 10) },
			"tenant-a/order-17 in_flight\n/order-17 in_flight\ntenant-a/order-18 in_flight\n", false},
		{"in flight, limited", func() ([]*ledger.Record, error) { return b.l.InFlight(b.ctx, 1) },
			"tenant-a/order-17 in_flight\n", false},
		{"find: limit 0", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "order-17", 0) }, "", true},
		{"find: empty key", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "", 10) }, "", true},
		{"find: key not printable", func() ([]*ledger.Record, error) { return b.l.Find(b.ctx, "a\nb", 10) }, "", true},
		{"in flight: limit -1", func() ([]*ledger.Record, error) { return b.l.InFlight(b.ctx, -1) }, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if tt.error {
				if !errors.Is(err, ledger.ErrInvalidRequest) || got != nil {
					t.Fatalf("got %v, %v; want an error wrapping ErrInvalidRequest", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := describe(got); s != tt.want {
				t.Fatalf("got\n%swant\n%s", s, tt.want)
			}
		})
	}

	// A found record is the record Get returns.
	found, err := b.l.Find(b.ctx, "order-17", 10)
	if err != nil {
		t.Fatal(err)
	}
	one, err := b.l.Get(b.ctx, "tenant-b", "order-17")
	if err != nil {
		t.Fatal(err)
	}
	if f := found[2]; f.Fence != one.Fence || f.Outcome.Status != 201 || !f.CompletedAt.Equal(one.CompletedAt) || f.Fingerprint != one.Fingerprint {
		t.Fatalf("Find's record %+v differs from Get's %+v", f, one)
	}
}
