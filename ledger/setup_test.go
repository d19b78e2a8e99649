package ledger_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// t0 is the fake clock's start: 2026-01-02T03:04:05.678Z.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

// clock is a hand-driven Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// bundle is what most tests need: a fresh migrated database reached
// through one driver (transactions TTx), a ledger on it with a fake clock
// (TTL 1 h, lease 1 min) and a context. db is the database through
// database/sql, for assertions.
type bundle[TTx any] struct {
	d     *testdb.DB[TTx]
	db    *sql.DB
	l     *ledger.Ledger[TTx]
	clock *clock
	ctx   context.Context
}

// eachDriver runs the test body on every driver (sqlite, postgres, mysql,
// pgxv5), each with a fresh bundle, all at once (testdb.EachAtOnce): a
// behaviour test spends its time waiting on its database, and the bodies
// share nothing but what they only read. The server engines' subtests
// skip, naming their variable, when it is unset.
func eachDriver(t *testing.T, sqlBody func(*testing.T, *bundle[*sql.Tx]), pgxBody func(*testing.T, *bundle[pgx.Tx])) {
	t.Helper()
	testdb.EachAtOnce(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { sqlBody(t, setupOn(t, d)) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { pgxBody(t, setupOn(t, d)) })
}

// eachDriverInTurn is eachDriver one driver after the other
// (testdb.Each), for the tests that hammer their database with many
// goroutines: at once they would share the CPUs and each stretch out,
// rather than overlap waits.
func eachDriverInTurn(t *testing.T, sqlBody func(*testing.T, *bundle[*sql.Tx]), pgxBody func(*testing.T, *bundle[pgx.Tx])) {
	t.Helper()
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { sqlBody(t, setupOn(t, d)) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { pgxBody(t, setupOn(t, d)) })
}

// ordersTable is the business table of the tests on d's engine.
func ordersTable[TTx any](d *testdb.DB[TTx]) string {
	return "CREATE TABLE orders (" + d.Serial + ", item TEXT NOT NULL)"
}

// setupOn adds the orders table to d and builds the bundle.
func setupOn[TTx any](t testing.TB, d *testdb.DB[TTx]) *bundle[TTx] {
	t.Helper()
	if _, err := d.SQL.Exec(ordersTable(d)); err != nil {
		t.Fatal(err)
	}
	b := &bundle[TTx]{d: d, db: d.SQL, clock: &clock{now: t0}, ctx: context.Background()}
	var err error
	b.l, err = ledger.New(d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.l.Close() })
	return b
}

// insertOrder is the business write of the tests, the same SQL on every
// engine (SQLite reads $1 as a parameter too).
func (b *bundle[TTx]) insertOrder(ctx context.Context, tx TTx, item string) (id int64, err error) {
	return b.d.QueryInt(ctx, tx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item)
}

// exec runs one of the test's own statements in tx.
func (b *bundle[TTx]) exec(ctx context.Context, tx TTx, query string, args ...any) error {
	return b.d.Exec(ctx, tx, query, args...)
}

// begin begins a transaction through the driver; rollback and commit end
// it, failing the test on error.
func (b *bundle[TTx]) begin(t testing.TB) TTx        { t.Helper(); return b.d.Begin(t) }
func (b *bundle[TTx]) commit(t testing.TB, tx TTx)   { t.Helper(); b.d.Commit(t, tx) }
func (b *bundle[TTx]) rollback(t testing.TB, tx TTx) { t.Helper(); b.d.Rollback(t, tx) }

func fp(s string) hash.Digest { return hash.Bytes([]byte(s)) }

func req(key, payload string) ledger.Request {
	return ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: fp(payload)}
}

func (b *bundle[TTx]) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *bundle[TTx]) claim(t testing.TB, r ledger.Request) *ledger.Claim {
	t.Helper()
	c, err := b.l.Claim(b.ctx, r)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

func (b *bundle[TTx]) get(t testing.TB, key string) *ledger.Record {
	t.Helper()
	r, err := b.l.Get(b.ctx, "tenant-1", key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r
}

// freshLike returns a fresh database of d's driver, for a subtest that
// needs one of its own.
func freshLike[TTx any](t *testing.T, d *testdb.DB[TTx]) *testdb.DB[TTx] {
	t.Helper()
	return testdb.FreshLike(t, d)
}
