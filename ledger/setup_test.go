package ledger_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// t0 is the fake clock's start: 2026-01-02T03:04:05.678Z.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

// clock is a hand-driven Config.Now.
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

// bundle is what most tests need: a fresh migrated database of one
// engine, a ledger for it with a fake clock (TTL 1 h, lease 1 min) and a
// context.
type bundle struct {
	e     testdb.Engine
	db    *sql.DB
	l     *ledger.Ledger
	clock *clock
	ctx   context.Context
}

// engines maps testdb's engines onto the ledger's.
var engines = map[testdb.Engine]ledger.Engine{
	testdb.EngineSQLite:   ledger.SQLite,
	testdb.EnginePostgres: ledger.Postgres,
}

// eachEngine runs f as one subtest per engine ("sqlite", "postgres"); the
// PostgreSQL one is skipped, with a message naming the variable, when
// testdb.PostgresEnv is unset.
func eachEngine(t *testing.T, f func(t *testing.T, e testdb.Engine)) {
	t.Helper()
	for _, e := range testdb.Engines() {
		t.Run(string(e), func(t *testing.T) { f(t, e) })
	}
}

// ordersTable is the business table of the tests, per engine.
var ordersTable = map[testdb.Engine]string{
	testdb.EngineSQLite:   `CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)`,
	testdb.EnginePostgres: `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL)`,
}

// newDB returns a fresh migrated database of engine e with the orders
// table.
func newDB(t testing.TB, e testdb.Engine) *sql.DB {
	t.Helper()
	db := testdb.Open(t, e)
	if _, err := db.Exec(ordersTable[e]); err != nil {
		t.Fatal(err)
	}
	return db
}

// insertOrder is the business write of the tests, the same SQL on both
// engines (SQLite reads $1 as a parameter too).
func insertOrder(ctx context.Context, tx *sql.Tx, item string) (id int64, err error) {
	err = tx.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item).Scan(&id)
	return id, err
}

func setup(t testing.TB, e testdb.Engine) *bundle {
	t.Helper()
	b := &bundle{e: e, db: newDB(t, e), clock: &clock{now: t0}, ctx: context.Background()}
	var err error
	b.l, err = ledger.New(ledger.Config{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now, Engine: engines[e]})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fp(s string) hash.Digest { return hash.Bytes([]byte(s)) }

func req(key, payload string) ledger.Request {
	return ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: fp(payload)}
}

func (b *bundle) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *bundle) claim(t testing.TB, r ledger.Request) *ledger.Claim {
	t.Helper()
	c, err := b.l.Claim(b.ctx, b.db, r)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

func (b *bundle) get(t testing.TB, key string) *ledger.Record {
	t.Helper()
	r, err := b.l.Get(b.ctx, b.db, "tenant-1", key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return r
}
