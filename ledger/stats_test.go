package ledger_test

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

func TestStats(t *testing.T) { eachDriver(t, testStats[*sql.Tx], testStats[pgx.Tx]) }

func testStats[TTx any](t *testing.T, b *bundle[TTx]) {
	empty, err := b.l.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if empty != (ledger.Stats{}) {
		t.Fatalf("Stats on an empty table = %+v, want the zero Stats", empty)
	}

	// purgeFixture(6): 6 expired completed (e), 3 abandoned in flight (z),
	// 2 live in flight (l), one old unexpired completed (old-c) claimed at
	// t0, one in flight (new-s) claimed at t0+1h whose lease ran out.
	purgeFixture(t, b, 6)
	want := ledger.Stats{
		InFlight:     3 + 2 + 1,
		Completed:    6 + 1,
		Expired:      6 + 3,
		LeaseExpired: 3 + 1, // z and new-s; the l rows' leases are extended
		Oldest:       t0.Truncate(time.Millisecond),
		Newest:       t0.Add(time.Hour).Truncate(time.Millisecond),
	}
	got, err := b.l.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !statsEqual(got, want) {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}

	var progress []int64
	n, err := b.l.Purge(b.ctx, ledger.PurgeOptions{BatchSize: 4, Progress: func(d int64) { progress = append(progress, d) }})
	if err != nil || n != 9 {
		t.Fatalf("Purge = %d, %v; want 9, nil", n, err)
	}
	if want := []int64{4, 8, 9}; !slices.Equal(progress, want) {
		t.Fatalf("Progress saw %v, want %v", progress, want)
	}

	got, err = b.l.Stats(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want = ledger.Stats{InFlight: 3, Completed: 1, LeaseExpired: 1, Oldest: want.Oldest, Newest: want.Newest}
	if !statsEqual(got, want) {
		t.Fatalf("Stats after purge = %+v, want %+v", got, want)
	}
}

func statsEqual(a, b ledger.Stats) bool {
	return a.InFlight == b.InFlight && a.Completed == b.Completed && a.Expired == b.Expired && a.LeaseExpired == b.LeaseExpired &&
		a.Oldest.Equal(b.Oldest) && a.Newest.Equal(b.Newest)
}
