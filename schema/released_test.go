package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

// TestReleasedMigration: migration 7 (released records, failure counts)
// on records written before it, and its down migration, on every driver.
// Down deletes the released records, as Release did before it, and keeps
// the others; up again, the records of version 6 read back as they were,
// count no failures, and a release keeps its record again.
func TestReleasedMigration(t *testing.T) {
	testdb.Each(t, testReleasedMigration[*sql.Tx], testReleasedMigration[pgx.Tx])
}

func testReleasedMigration[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: func() time.Time { return now }}
	r := func(key string) ledger.Request {
		return ledger.Request{Key: key, Fingerprint: hash.Bytes([]byte("p"))}
	}
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	done, err := l.Claim(ctx, r("done"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(ctx, done, ledger.Outcome{Status: 201, Body: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	released, err := l.Claim(ctx, r("released"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, released); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, r("running")); err != nil {
		t.Fatal(err)
	}
	l.Close()

	downByHand(t, ctx, d, 6)
	if v, dirty, err := schema.Version(ctx, d.Driver); v != 6 || dirty || err != nil {
		t.Fatalf("Version = %d, %v, %v; want 6", v, dirty, err)
	}
	var n int
	if err := d.SQL.QueryRowContext(ctx, "SELECT count(*) FROM idempotency_ledger").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d records after the down migration (%v), want 2: the released one gone", n, err)
	}
	if err := schema.Migrate(ctx, d.Driver); err != nil {
		t.Fatal(err)
	}

	l, err = ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if c, err := l.Claim(ctx, r("done")); err != nil || !c.Replayed() || c.Replay.Fence != 1 || string(c.Replay.Outcome.Body) != "ok" {
		t.Errorf("replay of a version 6 record: %+v, %v", c, err)
	}
	var inFlight *ledger.InFlightError
	if _, err := l.Claim(ctx, r("running")); !errors.As(err, &inFlight) {
		t.Errorf("claim of a version 6 record in flight: %v; want an *InFlightError", err)
	}
	now = now.Add(2 * time.Minute) // its lease runs out
	c, err := l.Claim(ctx, r("running"))
	if err != nil || c.Fence != 2 || c.Failures != 0 {
		t.Fatalf("takeover of a version 6 record: %+v, %v; want fence 2, no failures", c, err)
	}
	if err := l.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Claim(ctx, r("running")); err != nil || c.Fence != 3 || c.Failures != 1 {
		t.Errorf("claim after a release: %+v, %v; want fence 3, 1 failure", c, err)
	}
	if c, err := l.Claim(ctx, r("released")); err != nil || c.Fence != 1 {
		t.Errorf("claim of the key whose released record the down migration deleted: %+v, %v; want fence 1", c, err)
	}
}
