package ledger_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/sqlite"
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

// TestStatsEstimatesManyExpired: past 100,000 expired records SQLite's Stats
// stops counting them one by one and estimates them from rowids (counting
// millions takes seconds); the estimate is flagged, and close when
// records expire in the order they were written.
func TestStatsEstimatesManyExpired(t *testing.T) {
	testdb.Long(t) // 250,000 rows written through SQLite under -race
	db, _ := testdb.SQLiteFile(t, sqlite.Options{Synchronous: sqlite.SynchronousNormal})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := ledger.New(sqlite.New(db), ledger.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tt := range []struct {
		records, expired int
		estimated        bool
	}{
		{100_000, 100_000, false}, // the limit itself is still counted
		{150_000, 120_000, true},
	} {
		if _, err := db.Exec("DELETE FROM idempotency_ledger"); err != nil {
			t.Fatal(err)
		}
		testdb.FillSQLite(t, db, testdb.Fill{Records: tt.records, Expired: tt.expired, Now: now.UnixMilli(), Body: 10})
		s, err := l.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.ExpiredEstimated != tt.estimated || s.Estimated || s.Completed != int64(tt.records) {
			t.Errorf("%d records, %d expired: Stats = %+v, want Completed exact and ExpiredEstimated %v", tt.records, tt.expired, s, tt.estimated)
		}
		if d := s.Expired - int64(tt.expired); d < -int64(tt.expired)/100 || d > int64(tt.expired)/100 {
			t.Errorf("%d records, %d expired: Stats.Expired = %d, want it within 1%%", tt.records, tt.expired, s.Expired)
		}
	}
}

// TestStatsEstimatesManyExpiredPostgres: on PostgreSQL, past 100,000
// expired records Stats asks the planner instead of counting them (issue
// 25: 2.5M took 0.6 s); the estimate is flagged, and close once the table
// has been analyzed.
func TestStatsEstimatesManyExpiredPostgres(t *testing.T) {
	testdb.Long(t) // 150,000 rows
	db, _ := testdb.PostgresDSN(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := ledger.New(postgres.New(db), ledger.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	testdb.FillPostgres(t, db, testdb.Fill{Records: 150_000, Expired: 120_000, Now: now.UnixMilli(), Body: 10})
	if _, err := db.Exec("ANALYZE idempotency_ledger"); err != nil {
		t.Fatal(err)
	}
	s, err := l.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.ExpiredEstimated || s.Expired < 108_000 || s.Expired > 132_000 {
		t.Errorf("Stats = %+v, want Expired estimated within 10%% of 120,000", s)
	}
}
