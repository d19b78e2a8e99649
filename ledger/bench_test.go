package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/cputime"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

var syncModes = []sqlite.Synchronous{sqlite.SynchronousFull, sqlite.SynchronousNormal}

func benchDB(b *testing.B, s sqlite.Synchronous) *sql.DB {
	b.Helper()
	v := sqliteSetup{gate: true, indexes: true, autoVacuum: true}
	for _, off := range strings.Split(os.Getenv(benchWithoutEnv), ",") {
		switch off {
		case "":
		case "gate":
			v.gate = false
		case "indexes":
			v.indexes = false
		case "autovacuum":
			v.autoVacuum = false
		default:
			b.Fatalf("%s: unknown change %q", benchWithoutEnv, off)
		}
	}
	db, _ := openSQLiteAs(b, s, v)
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return db
}

// benchWithoutEnv names the environment variable that takes changes of
// the scale work out of the SQLite benchmarks, comma-separated:
// "gate" (a pool built with sql.Open and sqlite.DSN instead of sqlite.Open,
// so its writers meet in SQLite's busy handler), "indexes" (migration 4's
// in-flight and created_at indexes dropped), "autovacuum" (a file without
// incremental auto-vacuum). BENCHMARKS.md, "SQLite at one client",
// weighs each so.
const benchWithoutEnv = "IDEMLEDGER_BENCH_WITHOUT"

// sqliteSetup says which of the scale work's changes that touch the
// request path an SQLite ledger has.
type sqliteSetup struct {
	// gate: the pool is sqlite.Open's, whose writers queue in Go; else
	// sql.Open with sqlite.DSN, whose writers meet in SQLite's busy
	// handler.
	gate bool
	// indexes: migration 4's in-flight and created_at indexes stay.
	indexes bool
	// autoVacuum: the file has incremental auto-vacuum (sqlite.Open gives
	// it to new files), whose pointer-map pages each new page updates.
	autoVacuum bool
}

// openSQLiteAs opens a new, migrated SQLite file in a temporary directory
// with synchronous s and the changes of v.
func openSQLiteAs(tb testing.TB, s sqlite.Synchronous, v sqliteSetup) (db *sql.DB, path string) {
	tb.Helper()
	ctx := context.Background()
	path = filepath.Join(tb.TempDir(), "ledger.db")
	var err error
	if v.gate {
		db, err = sqlite.Options{Synchronous: s}.Open(path)
	} else {
		// DSN has the default settings (FULL); a test may change them.
		db, err = sql.Open(sqlite.DriverName, strings.Replace(sqlite.DSN(path), "synchronous(FULL)", "synchronous("+s.String()+")", 1))
		if err == nil {
			db.SetMaxOpenConns(sqlite.DefaultMaxOpenConns)
			db.SetMaxIdleConns(sqlite.DefaultMaxOpenConns)
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	// The mode of an empty file changes with the pragma and a VACUUM, on
	// one connection.
	mode := "NONE"
	if v.autoVacuum {
		mode = "INCREMENTAL"
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	for _, q := range []string{"PRAGMA auto_vacuum = " + mode, "VACUUM"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			tb.Fatal(q, err)
		}
	}
	conn.Close()
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		tb.Fatal(err)
	}
	if !v.indexes {
		for _, q := range []string{"DROP INDEX idemledger_ledger_in_flight", "DROP INDEX idemledger_ledger_created_at"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				tb.Fatal(q, err)
			}
		}
	}
	return db, path
}

// cpuMeter reports the process's CPU time per operation as cpu-ns/op, next
// to the wall-clock ns/op. Start it just before the b.Loop loop and call
// stop after it. The figure includes the pool's and the runtime's
// goroutines (GC), which is the cost a caller pays.
func cpuMeter(b *testing.B) (stop func()) {
	start := cputime.Process()
	return func() {
		b.ReportMetric(float64((cputime.Process()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// insertOrder is the business transaction's write.
func insertOrder(ctx context.Context, tx *sql.Tx, item string) (int64, error) {
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// benchLedger is the ledger under test: as New builds it (the sqlite
// driver's statements prepared once on db), or with the statements
// released at once ("nodb", every call prepares its statements again, as
// a ledger without Options.DB did before the drivers).
func benchLedger(b *testing.B, db *sql.DB, prepared bool) *Ledger[*sql.Tx] {
	b.Helper()
	l, err := New(sqlite.New(db), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if !prepared {
		l.Close()
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// ledgerModes names the two ways to build the ledger in benchmark names.
var ledgerModes = []struct {
	suffix   string
	prepared bool
}{{"", true}, {"-nodb", false}}

// completedRow writes a completed ledger record in one statement, as the
// "row" benchmark does: the least that any ledger keeping its record in
// the business transaction adds to it.
const completedRow = `INSERT INTO idempotency_ledger
    (scope, key, fingerprint, state, fence, status, body, created_at, completed_at, expires_at)
    VALUES ('bench', ?, ?, 'completed', 1, 0, ?, ?, ?, ?)`

// day is the default TTL in milliseconds.
const day = 24 * 60 * 60 * 1000

// BenchmarkMutate compares one business transaction (BEGIN, INSERT,
// COMMIT) without the ledger ("plain"), the same with a completed ledger
// record written by one more prepared INSERT and nothing else ("row": no
// savepoint, no claim, no outcome update), and inside Mutate with a new key
// every time ("first"), and a retry that replays ("replay"); "-nodb" is
// the ledger without Options.DB.
func BenchmarkMutate(b *testing.B) {
	ctx := context.Background()
	for _, s := range syncModes {
		b.Run("sync="+s.String()+"/plain", func(b *testing.B) {
			db := benchDB(b, s)
			stop := cpuMeter(b)
			for i := 0; b.Loop(); i++ {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := insertOrder(ctx, tx, fmt.Sprint("order-", i)); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
		b.Run("sync="+s.String()+"/row", func(b *testing.B) {
			db := benchDB(b, s)
			insertRow, err := db.Prepare(completedRow)
			if err != nil {
				b.Fatal(err)
			}
			defer insertRow.Close()
			stop := cpuMeter(b)
			for i := 0; b.Loop(); i++ {
				key := fmt.Sprint("order-", i)
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := insertOrder(ctx, tx, key); err != nil {
					b.Fatal(err)
				}
				now := time.Now().UnixMilli()
				fp := hash.Bytes([]byte(key))
				if _, err := tx.StmtContext(ctx, insertRow).ExecContext(ctx, key, fp[:], []byte("1"), now, now, now+day); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			stop()
		})
		for _, m := range ledgerModes {
			b.Run("sync="+s.String()+"/first"+m.suffix, func(b *testing.B) {
				db := benchDB(b, s)
				l := benchLedger(b, db, m.prepared)
				stop := cpuMeter(b)
				for i := 0; b.Loop(); i++ {
					key := fmt.Sprint("order-", i)
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					req := Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))}
					if _, err := Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
						return insertOrder(ctx, tx, key)
					}); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				stop()
			})
			b.Run("sync="+s.String()+"/replay"+m.suffix, func(b *testing.B) {
				db := benchDB(b, s)
				l := benchLedger(b, db, m.prepared)
				req := Request{Scope: "bench", Key: "order-0", Fingerprint: hash.Bytes([]byte("order-0"))}
				mutate := func() Result[int64] {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					res, err := Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
						return insertOrder(ctx, tx, "order-0")
					})
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
					return res
				}
				mutate()
				stop := cpuMeter(b)
				for b.Loop() {
					if !mutate().Replayed {
						b.Fatal("not a replay")
					}
				}
				stop()
			})
		}
	}
}

// BenchmarkClaimComplete is lease mode on the pool: Claim and Complete are
// two autocommit statements (two commits) per operation.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	for _, s := range syncModes {
		for _, m := range ledgerModes {
			b.Run("sync="+s.String()+m.suffix, func(b *testing.B) {
				db := benchDB(b, s)
				l := benchLedger(b, db, m.prepared)
				out := Outcome{Status: 201, Body: []byte(`{"id":1}`)}
				stop := cpuMeter(b)
				for i := 0; b.Loop(); i++ {
					key := fmt.Sprint("charge-", i)
					c, err := l.Claim(ctx, Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))})
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Complete(ctx, c, out); err != nil {
						b.Fatal(err)
					}
				}
				stop()
			})
		}
	}
}

// BenchmarkPurge deletes 100,000 expired records in batches of the default
// size, with the ledger built on Options.DB as users are told to; it reports
// rows/s, the longest batch (the longest hold of the write lock) and the
// CPU time per purged row (cpu-ns/row), which, like the wall clock, leaves
// out the untimed inserts that refill the table.
func BenchmarkPurge(b *testing.B) {
	const rows = 100_000
	ctx := context.Background()
	db := benchDB(b, sqlite.SynchronousFull)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := New(sqlite.New(db), Options{TTL: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	var longest, total, cpu time.Duration
	batchDone = func(_ int64, took time.Duration) { longest = max(longest, took) }
	b.Cleanup(func() { batchDone = nil })
	for b.Loop() {
		b.StopTimer()
		// Completed records that expired an hour ago, with 200-byte bodies.
		exp := now.Add(-time.Hour).UnixMilli()
		if _, err := db.ExecContext(ctx, `
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, body, created_at, completed_at, expires_at)
			SELECT 'bench', 'key-' || i, randomblob(32), 'completed', 1, 200, randomblob(200), ? - 1000, ? - 1000, ? + (i % 1000)
			FROM n`, rows, exp, exp, exp); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, startCPU := time.Now(), cputime.Process()
		n, err := l.Purge(ctx, PurgeOptions{})
		total += time.Since(start)
		cpu += cputime.Process() - startCPU
		if err != nil || n != rows {
			b.Fatalf("Purge = %d, %v", n, err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/total.Seconds(), "rows/s")
	b.ReportMetric(float64(longest.Microseconds())/1000, "ms/longest-batch")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows*b.N), "cpu-ns/row")
}
