package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/idemledger/idemledger/internal/faultdb"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// SQLite names the sqlite driver under test.
const SQLite = "sqlite"

// sqliteEngine is SQLite: a file in the test's temporary directory.
var sqliteEngine = &Engine{
	Name:   "sqlite",
	Serial: "id INTEGER PRIMARY KEY AUTOINCREMENT",
	// SQLite reads ? placeholders and double-quoted identifiers as they
	// are written.
	rebind: func(q string) string { return q },
	RefuseKey: []string{
		`CREATE TRIGGER refuse_key BEFORE INSERT ON idempotency_ledger
		 WHEN NEW.key = 'refused' BEGIN SELECT RAISE(ABORT, 'refused key'); END`,
	},
	// BEGIN IMMEDIATE ([sqlite.Open]) takes the write lock: LockLedger ""
	// and no LockWait.
	SavepointOutsideTx: "on SQLite a SAVEPOINT outside a transaction begins one",
	WritesNothing:      sqliteWritesNothing,
	Series: func(n int) string {
		return fmt.Sprintf("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < %d) SELECT n FROM c", n)
	},
	URL: func(_ testing.TB, source string) string { return source },
	// One connection per process, as the sqlite package advises for
	// several processes writing one file: the Go pool queues the
	// process's goroutines in order, and only one connection per process
	// polls SQLite's lock. With more, SQLite's busy handler (which polls
	// with growing sleeps, in no order) can starve one connection past
	// busy_timeout when 4 processes hammer the file under -race.
	ProcessConns: 1,
}

func init() {
	registerSQL(&sqlEntry{
		name:   SQLite,
		engine: sqliteEngine,
		open:   func(t testing.TB) *DB[*sql.Tx] { return SQLiteDB(t, sqlite.Options{}) },
		wrap: func(db *sql.DB, source string) *DB[*sql.Tx] {
			return sqlDB(SQLite, sqliteEngine, sqlite.New(db), db, source)
		},
		connect: func(source string, o Conns) (*sql.DB, error) {
			return sqlite.Options{MaxOpenConns: o.Max, BusyTimeout: o.LockWait}.Open(source)
		},
		// Through faultdb, which fails the statements a Plan names with
		// SQLite's own result codes, as the sqlite driver reads them.
		faulty: func(t testing.TB, source string, _ int, f *faults) any {
			f.Plan = &faultdb.Plan{}
			f.IOErr, f.Full = sqliteCode(10), sqliteCode(13) // SQLITE_IOERR, SQLITE_FULL
			db, err := faultdb.Open(source, f.Plan)
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			return sqlite.New(db)
		},
	})
}

// sqliteCode is an SQLite result code as the sqlite driver reads it (a
// Code method; https://sqlite.org/rescode.html).
type sqliteCode int

func (c sqliteCode) Error() string { return fmt.Sprintf("injected SQLite error %d", int(c)) }
func (c sqliteCode) Code() int     { return int(c) }

// SQLiteDB returns a fresh SQLite database through the sqlite driver,
// opened with o as SQLiteFile does.
func SQLiteDB(t testing.TB, o sqlite.Options) *DB[*sql.Tx] {
	t.Helper()
	db, path := SQLiteFile(t, o)
	return sqlDB(SQLite, sqliteEngine, sqlite.New(db), db, path)
}

// SQLiteFile returns a new SQLite database file in t.TempDir(), opened
// with o ([sqlite.Options]{} for the defaults: WAL, busy_timeout, immediate
// transactions, synchronous FULL), and migrated with
// [schema.Migrate]; it also returns the file's path, for tests that open the
// same file again (from another process, for example). It is closed when
// the test ends. Any failure ends the test.
func SQLiteFile(t testing.TB, o sqlite.Options) (db *sql.DB, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ledger.db")
	db, err := o.Open(path)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return db, path
}

// SQLitePool returns a fresh SQLite database (see SQLiteFile) as a *[sql.DB].
func SQLitePool(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := SQLiteFile(t, sqlite.Options{})
	return db
}

// sqliteWritesNothing: no connection commits anything while the answers
// are given (PRAGMA data_version of a separate connection changes when
// another connection commits), and the answers come while another
// connection holds the write lock (BEGIN IMMEDIATE, then a write): a
// claim that wrote would wait for it (busy_timeout) and fail.
func sqliteWritesNothing(t *testing.T, q Quiet) {
	ctx := context.Background()
	conn, err := q.SQL.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dataVersion := func() int64 {
		var v int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := dataVersion()
	for range 5 {
		q.Answer(t)
	}
	if after := dataVersion(); after != before {
		t.Errorf("data_version went from %d to %d over the replays; want no commit", before, after)
	}
	lock, err := q.SQL.BeginTx(ctx, nil) // BEGIN IMMEDIATE (sqlite.Open)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.Exec(`INSERT INTO orders (item) VALUES ('holding the write lock')`); err != nil {
		t.Fatal(err)
	}
	q.Answer(t)
}
