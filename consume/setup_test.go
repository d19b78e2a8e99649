package consume_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

// clock is a hand-driven ledger.Options.Now.
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

// recorder is an Observer that keeps the kinds of the events it gets, and
// their texts, to check that no key appears in them.
type recorder struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (r *recorder) Observe(_ context.Context, e ledger.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// kinds returns the kinds seen so far, and forgets them; an event whose
// Method or Route is not the consumer's says so.
func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for _, e := range r.events {
		k := e.Kind.String()
		if e.Method != consume.EventMethod || e.Route != "orders" {
			k += " (method " + e.Method + ", route " + e.Route + ")"
		}
		ks = append(ks, k)
	}
	r.events = nil
	return ks
}

// bundle is a fresh database reached through one driver, with an effects
// table, a ledger on a fake clock (lease 1 min, TTL 1 h) and a Consumer on
// it (scope "orders-sub", NackDelay 250 ms).
type bundle[TTx any] struct {
	d     *testdb.DB[TTx]
	l     *ledger.Ledger[TTx]
	c     *consume.Consumer[TTx]
	clock *clock
	obs   *recorder
	ctx   context.Context
}

const nackDelay = 250 * time.Millisecond

func eachDriver(t *testing.T, sqlBody func(*testing.T, *bundle[*sql.Tx]), pgxBody func(*testing.T, *bundle[pgx.Tx])) {
	t.Helper()
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { sqlBody(t, setupOn(t, d, consume.Options{})) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { pgxBody(t, setupOn(t, d, consume.Options{})) })
}

func setupOn[TTx any](t testing.TB, d *testdb.DB[TTx], opts consume.Options) *bundle[TTx] {
	t.Helper()
	if _, err := d.SQL.Exec(`CREATE TABLE effects (id VARCHAR(255) PRIMARY KEY, note TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	b := &bundle[TTx]{d: d, clock: &clock{now: t0}, obs: &recorder{}, ctx: context.Background()}
	var err error
	b.l, err = ledger.New(d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.l.Close() })
	b.c = b.consumer(t, opts)
	return b
}

// consumer returns a Consumer on b's ledger with opts, whose Scope,
// NackDelay and Observer default to the bundle's.
func (b *bundle[TTx]) consumer(t testing.TB, opts consume.Options) *consume.Consumer[TTx] {
	t.Helper()
	if opts.Scope == "" {
		opts.Scope = "orders-sub"
	}
	if opts.NackDelay == 0 {
		opts.NackDelay = nackDelay
	}
	if opts.Observer == nil {
		opts.Observer = b.obs
	}
	opts.Name = "orders"
	c, err := consume.New(b.l, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// effects counts the rows of the effects table.
func (b *bundle[TTx]) effects(t testing.TB) int {
	t.Helper()
	var n int
	if err := b.d.SQL.QueryRow(`SELECT count(*) FROM effects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeEffect inserts msg's effect through tx.
func (b *bundle[TTx]) writeEffect(ctx context.Context, tx TTx, msg consume.Message) error {
	return b.d.Exec(ctx, tx, `INSERT INTO effects (id, note) VALUES ($1, $2)`, msg.ID, string(msg.Payload))
}

// outside inserts msg's effect through the pool, as an effect outside any
// transaction of the consumer's (lease mode).
func (b *bundle[TTx]) outside(msg consume.Message) error {
	_, err := b.d.SQL.Exec(testdb.Rebind(b.d.Engine, `INSERT INTO effects (id, note) VALUES (?, ?)`), msg.ID, string(msg.Payload))
	return err
}
