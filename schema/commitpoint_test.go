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

// TestCommitPointMigration: migration 2 (the commit mark) on records
// written before it, and its down migration, on every driver. Records of
// version 1 read back unchanged with no mark; a mark dropped by the down
// migration leaves an ordinary in-flight record that a retry takes over.
func TestCommitPointMigration(t *testing.T) {
	testdb.Each(t, testCommitPointMigration[*sql.Tx], testCommitPointMigration[pgx.Tx])
}

func testCommitPointMigration[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: func() time.Time { return now }}
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := func(key string) ledger.Request {
		return ledger.Request{Key: key, Fingerprint: hash.Bytes([]byte("p"))}
	}
	done, err := l.Claim(ctx, r("done"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(ctx, done, ledger.Outcome{Status: 201, Body: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, r("running")); err != nil {
		t.Fatal(err)
	}
	marked, err := l.Claim(ctx, r("marked"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx, marked); err != nil {
		t.Fatal(err)
	}
	l.Close()

	// Back to version 1 by hand, as a database migrated by the previous
	// release would be, less the mark: the down migrations above version 1,
	// newest first.
	downByHand(t, ctx, d, 1)
	if v, dirty, err := schema.Version(ctx, d.Driver); v != 1 || dirty || err != nil {
		t.Fatalf("Version = %d, %v, %v; want 1", v, dirty, err)
	}
	if err := schema.Migrate(ctx, d.Driver); err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := schema.Version(ctx, d.Driver); v != schema.Latest || dirty || err != nil {
		t.Fatalf("after Migrate: Version = %d, %v, %v; want %d", v, dirty, err, schema.Latest)
	}

	l, err = ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, key := range []string{"done", "running", "marked"} {
		rec, err := l.Get(ctx, "", key)
		if err != nil || !rec.CommittedAt.IsZero() {
			t.Errorf("%s after the migration: %+v, %v; want it readable, without a mark", key, rec, err)
		}
	}
	if c, err := l.Claim(ctx, r("done")); err != nil || !c.Replayed() || string(c.Replay.Outcome.Body) != "ok" {
		t.Errorf("replay of a version 1 record: %+v, %v", c, err)
	}
	now = now.Add(2 * time.Minute) // both leases run out
	for _, key := range []string{"running", "marked"} {
		c, err := l.Claim(ctx, r(key))
		if err != nil || c.Fence != 2 || !c.CommittedAt.IsZero() {
			t.Errorf("takeover of %s: %+v, %v; want fence 2, no mark", key, c, err)
		}
	}
	// And the new column works: a mark written now is kept.
	c, err := l.Claim(ctx, r("fresh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	var ce *ledger.CommittedError
	if _, err := l.Claim(ctx, r("fresh")); !errors.As(err, &ce) || ce.Fence != 1 {
		t.Errorf("claim of a marked record after its lease: %v; want a *CommittedError of fence 1", err)
	}
}
