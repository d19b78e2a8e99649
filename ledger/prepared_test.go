//go:build ignore

// Not yet ported to the drivers (issue 13): the kinds of DBTX it ran on
// are gone; what remains (statements prepared by the sqlite driver, reused
// by the pool and its transactions) belongs in package sqlite.

package ledger_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// preparedSetup is setup with Config.DB: the ledger's statements are
// prepared on b.db.
func preparedSetup(t *testing.T) *bundle {
	t.Helper()
	b := setup(t, testdb.EngineSQLite)
	l, err := ledger.New(ledger.Config{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now, DB: b.db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	b.l = l
	return b
}

// TestPreparedOnEveryDBTX runs every lease-mode operation and Mutate with a
// ledger prepared on one pool, on each kind of DBTX: the pool, its
// transactions and connections (which cannot reuse the statements), another
// pool and its transactions (which must not get them), and on the pool
// after Close. All must behave exactly as without Config.DB.
func TestPreparedOnEveryDBTX(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// dbtx returns what the operations run on, and a function that
		// ends it (commits a transaction) before the checks.
		dbtx func(t *testing.T, b *bundle, other *sql.DB) (ledger.DBTX, func())
	}{
		{"pool", func(t *testing.T, b *bundle, _ *sql.DB) (ledger.DBTX, func()) { return b.db, func() {} }},
		{"tx of the pool", func(t *testing.T, b *bundle, _ *sql.DB) (ledger.DBTX, func()) { return begin(t, b.db) }},
		{"conn of the pool", func(t *testing.T, b *bundle, _ *sql.DB) (ledger.DBTX, func()) {
			conn, err := b.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return conn, func() { conn.Close() }
		}},
		{"other pool", func(t *testing.T, _ *bundle, other *sql.DB) (ledger.DBTX, func()) { return other, func() {} }},
		{"tx of another pool", func(t *testing.T, _ *bundle, other *sql.DB) (ledger.DBTX, func()) { return begin(t, other) }},
		{"pool after Close", func(t *testing.T, b *bundle, _ *sql.DB) (ledger.DBTX, func()) {
			if err := b.l.Close(); err != nil {
				t.Fatal(err)
			}
			return b.db, func() {}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := preparedSetup(t)
			other := testdb.SQLite(t)
			// where reads the results: the database the operations wrote to.
			where := b.db
			if strings.Contains(tt.name, "other") {
				where = other
			}
			db, end := tt.dbtx(t, b, other)

			out := ledger.Outcome{Status: 201, Body: []byte(`{"id":7}`)}
			c, err := b.l.Claim(ctx, db, req("k1", "p1"))
			if err != nil || c.Replayed() || c.Fence != 1 {
				t.Fatalf("Claim = %+v, %v; want a lease with fence 1", c, err)
			}
			if err := b.l.Extend(ctx, db, c); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if err := b.l.Complete(ctx, db, c, out); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			again, err := b.l.Claim(ctx, db, req("k1", "p1"))
			if err != nil || !again.Replayed() || string(again.Replay.Outcome.Body) != `{"id":7}` || again.Replay.Outcome.Status != 201 {
				t.Fatalf("second Claim = %+v, %v; want a replay of 201 {\"id\":7}", again, err)
			}
			if _, err := b.l.Claim(ctx, db, req("k1", "p2")); !errors.Is(err, ledger.ErrKeyReused) {
				t.Fatalf("Claim with another payload: %v, want ErrKeyReused", err)
			}
			c2, err := b.l.Claim(ctx, db, req("k2", "p1"))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.l.Release(ctx, db, c2); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := b.l.Complete(ctx, db, c2, out); !errors.Is(err, ledger.ErrLeaseLost) {
				t.Fatalf("Complete after Release: %v, want ErrLeaseLost", err)
			}
			if _, err := b.l.Get(ctx, db, "tenant-1", "k2"); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("Get of a released key: %v, want ErrNotFound", err)
			}

			if tx, ok := db.(*sql.Tx); ok {
				// Mutate, a replay, and a failing fn whose claim vanishes.
				for _, want := range []bool{false, true} {
					res, err := ledger.Mutate(ctx, b.l, tx, req("m1", "p1"), func(ctx context.Context) (string, error) {
						return "done", nil
					})
					if err != nil || res.Value != "done" || res.Replayed != want {
						t.Fatalf("Mutate = %+v, %v; want done, replayed %v", res, err, want)
					}
				}
				boom := errors.New("boom")
				if _, err := ledger.Mutate(ctx, b.l, tx, req("m2", "p1"), func(ctx context.Context) (int, error) {
					return 0, boom
				}); err != boom {
					t.Fatalf("Mutate with failing fn: %v, want boom", err)
				}
			}
			end()

			r, err := b.l.Get(ctx, where, "tenant-1", "k1")
			if err != nil || r.State != ledger.StateCompleted || string(r.Outcome.Body) != `{"id":7}` {
				t.Fatalf("Get k1 = %+v, %v; want completed with {\"id\":7}", r, err)
			}
			wantRows := 1
			if _, ok := db.(*sql.Tx); ok {
				wantRows = 2 // k1 and m1; m2 vanished with its savepoint
			}
			st, err := b.l.Stats(ctx, where)
			if err != nil || st.Completed != int64(wantRows) || st.InFlight != 0 {
				t.Fatalf("Stats = %+v, %v; want %d completed, none in flight", st, err, wantRows)
			}
			b.clock.Advance(2 * time.Hour)
			n, err := b.l.Purge(ctx, where, ledger.PurgeOptions{})
			if err != nil || n != int64(wantRows) {
				t.Fatalf("Purge = %d, %v; want %d", n, err, wantRows)
			}
		})
	}
}

func begin(t *testing.T, db *sql.DB) (*sql.Tx, func()) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return tx, func() {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewPrepareFails(t *testing.T) {
	// A pool whose schema is not migrated: nothing to prepare against.
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = ledger.New(ledger.Config{DB: db})
	// sqlc prepares the queries in alphabetical order: Abandon first.
	const want = "ledger: prepare: error preparing query Abandon: SQL logic error: no such table: idempotency_ledger (1)"
	if err == nil || err.Error() != want {
		t.Fatalf("New = %v, want %q", err, want)
	}
}

// TestPreparedNestedAndPanic: the savepoint logic of Mutate is unchanged
// with prepared statements.
func TestPreparedNestedAndPanic(t *testing.T) {
	b := preparedSetup(t)
	tx, commit := begin(t, b.db)
	outer, err := ledger.Mutate(b.ctx, b.l, tx, req("outer", "p"), func(ctx context.Context) (int, error) {
		inner, err := ledger.Mutate(ctx, b.l, tx, req("inner", "p"), func(ctx context.Context) (int, error) {
			return 2, nil
		})
		return inner.Value + 1, err
	})
	if err != nil || outer.Value != 3 {
		t.Fatalf("nested Mutate = %+v, %v; want 3", outer, err)
	}
	func() {
		defer func() {
			if r := recover(); r != "kaput" {
				t.Fatalf("recovered %v, want kaput", r)
			}
		}()
		ledger.Mutate(b.ctx, b.l, tx, req("panics", "p"), func(ctx context.Context) (int, error) {
			panic("kaput")
		})
	}()
	commit()
	if n := b.count(t, "idempotency_ledger"); n != 2 {
		t.Fatalf("%d records, want 2 (outer, inner)", n)
	}
}

// TestPreparedExactlyOnceUnderContention is TestExactlyOnceUnderContention
// with the statements prepared on the pool.
func TestPreparedExactlyOnceUnderContention(t *testing.T) {
	b := preparedSetup(t)
	got, errs := hammer(b.ctx, b.db, b.l, hammerWorkers)
	for _, err := range errs {
		t.Error(err)
	}
	checkExactlyOnce(t, b.db, got)
}

// TestPreparedStatementsAreReused counts the SQL texts that the driver is
// asked to parse (prepare, or query and exec without a prepared statement):
// with Config.DB, once warm, no statement on idempotency_ledger is parsed
// again, on the pool or in its transactions; without it, every call parses.
func TestPreparedStatementsAreReused(t *testing.T) {
	for _, prepared := range []bool{true, false} {
		t.Run(fmt.Sprint("prepared=", prepared), func(t *testing.T) {
			ctx := context.Background()
			parsed := &parseLog{}
			db := sql.OpenDB(countingConnector{dsn: sqlite.DSN(filepath.Join(t.TempDir(), "ledger.db")), log: parsed})
			defer db.Close()
			// One connection, so that the warm-up prepares on the
			// connection that the counted calls use.
			db.SetMaxOpenConns(1)
			if err := schema.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			cfg := ledger.Config{}
			if prepared {
				cfg.DB = db
			}
			l, err := ledger.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			work := func(i int) {
				c, err := l.Claim(ctx, db, req(fmt.Sprint("lease-", i), "p"))
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Complete(ctx, db, c, ledger.Outcome{Status: 200}); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Claim(ctx, db, req(fmt.Sprint("lease-", i), "p")); err != nil {
					t.Fatal(err)
				}
				tx, commit := begin(t, db)
				for range 2 { // first execution, then replay
					if _, err := ledger.Mutate(ctx, l, tx, req(fmt.Sprint("tx-", i), "p"), func(context.Context) (int, error) {
						return i, nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				commit()
			}
			work(0)
			parsed.reset()
			for i := 1; i <= 3; i++ {
				work(i)
			}
			ledgerQueries := 0
			for _, q := range parsed.reset() {
				if strings.Contains(q, "idempotency_ledger") {
					ledgerQueries++
				}
			}
			// Without DB, each round parses 8: on the pool and again in the
			// transaction, the insert and complete of a first claim, then the
			// insert and get of a replay.
			want := 0
			if !prepared {
				want = 3 * 8
			}
			if ledgerQueries != want {
				t.Errorf("%d ledger statements parsed in 3 rounds, want %d", ledgerQueries, want)
			}
		})
	}
}

// parseLog records the SQL texts a connection is asked to parse.
type parseLog struct {
	mu sync.Mutex
	qs []string
}

func (p *parseLog) add(q string) {
	p.mu.Lock()
	p.qs = append(p.qs, q)
	p.mu.Unlock()
}

func (p *parseLog) reset() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	qs := p.qs
	p.qs = nil
	return qs
}

// countingConnector opens modernc.org/sqlite connections that log what they
// parse.
type countingConnector struct {
	dsn string
	log *parseLog
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, log: c.log}, nil
}

func (c countingConnector) Driver() driver.Driver {
	db, _ := sql.Open(sqlite.DriverName, "")
	defer db.Close()
	return db.Driver()
}

// countingConn passes everything to the modernc.org/sqlite connection and
// logs the texts of Prepare, Exec and Query.
type countingConn struct {
	driver.Conn
	log *parseLog
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.log.add(q)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.log.add(q)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.log.add(q)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
