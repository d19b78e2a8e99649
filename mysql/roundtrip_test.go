package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

// countingConn counts round trips: each time the client reads after it
// wrote, it waited for the server. A command that gets no reply
// (COM_STMT_CLOSE) is written without a read, so it is not counted.
type countingConn struct {
	net.Conn
	wrote bool
	trips *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.wrote = true
	return c.Conn.Write(b)
}

func (c *countingConn) Read(b []byte) (int, error) {
	if c.wrote {
		c.wrote = false
		c.trips.Add(1)
	}
	return c.Conn.Read(b)
}

var (
	registerCounting sync.Once
	trips            atomic.Int64
)

// countingDB opens the database of d again through a dialer that counts
// round trips into trips, with one connection and the DSN's parameters
// changed by tweak.
func countingDB(t *testing.T, d *testdb.DB[*sql.Tx], tweak func(*gomysql.Config)) *sql.DB {
	t.Helper()
	registerCounting.Do(func() {
		gomysql.RegisterDialContext("idemledger-counting", func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, trips: &trips}, nil
		})
	})
	cfg, err := gomysql.ParseDSN(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net = "idemledger-counting"
	tweak(cfg)
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(time.Hour)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestRoundTrips counts the round trips of a first Mutate, of a replay and
// of the baselines of BENCHMARKS.md (a plain transaction inserting one order,
// and one read of a record), with and without interpolateParams, and holds
// Mutate to the counts the driver is built for: at one client round trips
// set a first run's pace on MySQL (BENCHMARKS.md, "MySQL / MariaDB").
// It counts; it does not time anything.
func TestRoundTrips(t *testing.T) {
	d := testdb.MySQLDB(t)
	if _, err := d.SQL.Exec("CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		interpolate bool
	}{{"default", false}, {"interpolateParams", true}} {
		t.Run(tc.name, func(t *testing.T) {
			db := countingDB(t, d, func(c *gomysql.Config) { c.InterpolateParams = tc.interpolate })
			l, err := ledger.New(mysql.New(db), ledger.Options{TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			fp := hash.Bytes([]byte("payload"))
			insert := func(tx *sql.Tx, item string) (int64, error) {
				r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
				if err != nil {
					return 0, err
				}
				return r.LastInsertId()
			}
			count := func(f func(tx *sql.Tx) error) int64 {
				t.Helper()
				// Warm the connection (and any statement prepared on it) first.
				for i := range 2 {
					before := trips.Load()
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					if err := f(tx); err != nil {
						t.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
					if i == 1 {
						return trips.Load() - before
					}
				}
				panic("unreachable")
			}
			var n atomic.Int64
			plain := count(func(tx *sql.Tx) error {
				_, err := insert(tx, "plain")
				return err
			})
			first := count(func(tx *sql.Tx) error {
				k := fmt.Sprintf("%s-first-%d", tc.name, n.Add(1))
				_, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: k, Fingerprint: fp}, func(ctx context.Context) (int64, error) {
					return insert(tx, k)
				})
				return err
			})
			replay := count(func(tx *sql.Tx) error {
				res, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: tc.name + "-first-1", Fingerprint: fp}, func(ctx context.Context) (int64, error) {
					return 0, fmt.Errorf("ran")
				})
				if err == nil && !res.Replayed {
					err = fmt.Errorf("not replayed")
				}
				return err
			})
			before := trips.Load()
			var body []byte
			if err := db.QueryRowContext(ctx, "SELECT body FROM idempotency_ledger WHERE scope = '' AND `key` = ?", tc.name+"-first-1").Scan(&body); err != nil {
				t.Fatal(err)
			}
			read := trips.Load() - before
			t.Logf("round trips: plain transaction %d, first Mutate %d, replay in a transaction %d, plain read %d", plain, first, replay, read)
			// A first run adds five of the ledger's own (the read with
			// the clock, SAVEPOINT, INSERT, the outcome, RELEASE), each
			// one round trip, prepared or interpolated; a replay is the
			// read alone, between BEGIN and COMMIT.
			if first > plain+5 {
				t.Errorf("a first Mutate took %d round trips, the plain transaction %d; want at most 5 more", first, plain)
			}
			if replay > read+2 {
				t.Errorf("a replay in a transaction took %d round trips, a plain read %d; want at most BEGIN and COMMIT more", replay, read)
			}
		})
	}
}

// TestStepTxRoundTrips: a database step's record (RecordStepTx) is one
// statement of its own in the caller's transaction, one round trip more
// than the same transaction without it, prepared or interpolated.
func TestStepTxRoundTrips(t *testing.T) {
	d := testdb.MySQLDB(t)
	if _, err := d.SQL.Exec("CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for _, interpolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpolateParams=%v", interpolate), func(t *testing.T) {
			db := countingDB(t, d, func(c *gomysql.Config) { c.InterpolateParams = interpolate })
			l, err := ledger.New(mysql.New(db), ledger.Options{TTL: time.Hour, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			order := func(item string, record bool) int64 {
				t.Helper()
				key := fmt.Sprintf("%v-%s", interpolate, item)
				var cl *ledger.Claim
				if record {
					if cl, err = l.Claim(ctx, ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(item))}); err != nil {
						t.Fatal(err)
					}
				}
				before := trips.Load()
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", key); err != nil {
					t.Fatal(err)
				}
				if record {
					if err := l.RecordStepTx(ctx, tx, cl, "order", []byte(item)); err != nil {
						t.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				return trips.Load() - before
			}
			for i := range 2 { // warm up: statements prepared on the connection
				order(fmt.Sprintf("warm-%d", i), true)
			}
			plain, step := order("plain", false), order("step", true)
			t.Logf("round trips: plain transaction %d, with the step's record %d", plain, step)
			if step != plain+1 {
				t.Errorf("with the step's record: %d round trips, the plain transaction %d; want 1 more", step, plain)
			}
			// An outside step's record and the steps' deletion after the
			// outcome, on the pool: one round trip each.
			pool := func(key string) (record, forget int64) {
				t.Helper()
				cl, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))})
				if err != nil {
					t.Fatal(err)
				}
				before := trips.Load()
				if err := l.RecordStep(ctx, cl, "a", nil); err != nil {
					t.Fatal(err)
				}
				record = trips.Load() - before
				if err := l.Complete(ctx, cl, ledger.Outcome{Status: 201}); err != nil {
					t.Fatal(err)
				}
				before = trips.Load()
				if err := l.ForgetSteps(ctx, cl); err != nil {
					t.Fatal(err)
				}
				return record, trips.Load() - before
			}
			pool(fmt.Sprintf("%v-warm-pool", interpolate))
			if record, forget := pool(fmt.Sprintf("%v-pool", interpolate)); record != 1 || forget != 1 {
				t.Errorf("RecordStep: %d round trips, ForgetSteps: %d; want 1 each", record, forget)
			}
		})
	}
}
