// Package testdb gives tests fresh, migrated databases: real engines, never
// mocks, each reached through one of the ledger's drivers ("sqlite",
// "postgres", "pgxv5", "mysql"). Each runs a test body on every driver.
package testdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	msqlite "modernc.org/sqlite"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"

	"github.com/idemledger/idemledger/postgres"
)

// The drivers under test.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	PgxV5    = "pgxv5"
	MySQL    = "mysql"
)

// The registry of drivers under test: a driver is added here, with the
// function that opens a fresh, migrated database through it, and every
// behaviour test runs on it. sqlDrivers take *sql.Tx, pgxDrivers pgx.Tx.
var (
	sqlDrivers = []struct {
		name string
		open func(testing.TB) *DB[*sql.Tx]
		// wrap is the driver over a pool the test opened itself.
		wrap func(db *sql.DB, source string) *DB[*sql.Tx]
	}{
		{SQLite, func(t testing.TB) *DB[*sql.Tx] { return SQLiteDB(t, sqlite.Options{}) },
			func(db *sql.DB, source string) *DB[*sql.Tx] {
				return sqlDB(SQLite, "sqlite", sqlite.New(db), db, source)
			}},
		{Postgres, PostgresDB,
			func(db *sql.DB, source string) *DB[*sql.Tx] {
				return sqlDB(Postgres, "postgres", postgres.New(db), db, source)
			}},
		{MySQL, MySQLDB, mysqlDB},
	}
	pgxDrivers = []struct {
		name string
		open func(testing.TB) *DB[pgx.Tx]
	}{
		{PgxV5, PgxDB},
	}
)

// Drivers lists every driver's name, SQLite first.
func Drivers() []string {
	var names []string
	for _, d := range sqlDrivers {
		names = append(names, d.name)
	}
	for _, d := range pgxDrivers {
		names = append(names, d.name)
	}
	return names
}

// Driver is a ledger driver that package schema can migrate: what every
// driver of this module is.
type Driver[TTx any] interface {
	driver.Driver[TTx]
	schema.Driver
}

// DB is a fresh, migrated database under test, reached through one driver
// whose transactions are TTx.
type DB[TTx any] struct {
	// Name is the driver's name (SQLite, Postgres, PgxV5, MySQL); Engine
	// the database engine's ("sqlite", "postgres", "mysql").
	Name, Engine string
	// Driver is the ledger's driver over the database.
	Driver Driver[TTx]
	// Serial is the engine's column definition of an auto-numbered
	// bigint primary key named id, for the tests' own tables:
	// "CREATE TABLE orders (" + d.Serial + ", item TEXT NOT NULL)".
	Serial string
	// SQL reaches the same database through database/sql, for setup and
	// assertions; it is the driver's own pool on SQLite and postgres.
	SQL *sql.DB
	// Source is the SQLite file's path or the PostgreSQL connection
	// string (with the test's schema on its search_path).
	Source string

	closeDB func()
	exec    func(ctx context.Context, tx TTx, query string, args ...any) error
	query   func(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
}

// CloseDriverDB closes the database handle the driver holds (the *sql.DB,
// or the *pgxpool.Pool), as a store that goes away: every later operation
// of the driver fails.
func (d *DB[TTx]) CloseDriverDB() { d.closeDB() }

// Exec runs query, a statement of the test's own (a business write), in
// tx. Placeholders are $1, $2, ... on every engine (SQLite reads them too).
func (d *DB[TTx]) Exec(ctx context.Context, tx TTx, query string, args ...any) error {
	return d.exec(ctx, tx, query, args...)
}

// QueryInt runs query in tx and scans its one row's one column.
func (d *DB[TTx]) QueryInt(ctx context.Context, tx TTx, query string, args ...any) (int64, error) {
	return d.query(ctx, tx, query, args...)
}

// Begin begins a transaction through the driver, failing the test on error.
func (d *DB[TTx]) Begin(t testing.TB) TTx {
	t.Helper()
	tx, err := d.Driver.Begin(context.Background())
	if err != nil {
		t.Fatalf("testdb: begin: %v", err)
	}
	return tx
}

// Commit commits tx through the driver, failing the test on error.
func (d *DB[TTx]) Commit(t testing.TB, tx TTx) {
	t.Helper()
	if err := d.Driver.Commit(context.Background(), tx); err != nil {
		t.Fatalf("testdb: commit: %v", err)
	}
}

// Rollback rolls tx back through the driver, failing the test on error.
func (d *DB[TTx]) Rollback(t testing.TB, tx TTx) {
	t.Helper()
	if err := d.Driver.Rollback(context.Background(), tx); err != nil {
		t.Fatalf("testdb: rollback: %v", err)
	}
}

// Each runs the test body once per driver, as subtests named after them:
// sqlBody on "sqlite" and "postgres" (transactions are *sql.Tx), pgxBody on
// "pgxv5" (pgx.Tx). Write the body once, generic in TTx, and pass both
// instances: testdb.Each(t, body[*sql.Tx], body[pgx.Tx]). The PostgreSQL
// subtests skip, naming PostgresEnv, when it is unset.
func Each(t *testing.T, sqlBody func(*testing.T, *DB[*sql.Tx]), pgxBody func(*testing.T, *DB[pgx.Tx])) {
	t.Helper()
	for _, d := range sqlDrivers {
		t.Run(d.name, func(t *testing.T) { sqlBody(t, d.open(t)) })
	}
	for _, d := range pgxDrivers {
		t.Run(d.name, func(t *testing.T) { pgxBody(t, d.open(t)) })
	}
}

// EachSQL runs body on the database/sql drivers only ("sqlite",
// "postgres"): for tests of what only database/sql has (a *sql.Conn, a
// faulty database/sql driver). Say why at the call.
func EachSQL(t *testing.T, body func(*testing.T, *DB[*sql.Tx])) {
	t.Helper()
	for _, d := range sqlDrivers {
		t.Run(d.name, func(t *testing.T) { body(t, d.open(t)) })
	}
}

// SQLiteDB returns a fresh SQLite database through the sqlite driver,
// opened with o as SQLiteFile does.
func SQLiteDB(t testing.TB, o sqlite.Options) *DB[*sql.Tx] {
	t.Helper()
	db, path := SQLiteFile(t, o)
	return sqlDB(SQLite, "sqlite", sqlite.New(db), db, path)
}

// serial is DB.Serial per engine.
var serial = map[string]string{
	"sqlite":   "id INTEGER PRIMARY KEY AUTOINCREMENT",
	"postgres": "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	"mysql":    "id BIGINT AUTO_INCREMENT PRIMARY KEY",
}

func sqlDB(name, engine string, d Driver[*sql.Tx], db *sql.DB, source string) *DB[*sql.Tx] {
	return &DB[*sql.Tx]{
		Name: name, Engine: engine, Driver: d, SQL: db, Source: source, Serial: serial[engine],
		closeDB: func() { db.Close() },
		exec: func(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		},
		query: func(ctx context.Context, tx *sql.Tx, query string, args ...any) (n int64, err error) {
			err = tx.QueryRowContext(ctx, query, args...).Scan(&n)
			return n, err
		},
	}
}

// SQLiteFile returns a new SQLite database file in t.TempDir(), opened
// with o (sqlite.Options{} for the defaults: WAL, busy_timeout, immediate
// transactions, synchronous FULL), and migrated with
// schema.Migrate; it also returns the file's path, for tests that open the
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

// Rebind rewrites the ? placeholders of query for an engine or driver name
// ("sqlite", "mysql"; "postgres" or "pgxv5"): $1, $2, ... on PostgreSQL,
// unchanged on SQLite and MySQL. On MySQL it also turns the standard
// double quotes of identifiers into backquotes, so that a test writes the
// ledger's "key" column (a reserved word there) once for every engine. It does not look inside string literals: keep question marks
// out of them.
func Rebind(engine, query string) string {
	if engine == "mysql" {
		return strings.ReplaceAll(query, `"`, "`")
	}
	if engine == "sqlite" || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SQLitePool returns a fresh SQLite database (see SQLiteFile) as a *sql.DB.
func SQLitePool(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := SQLiteFile(t, sqlite.Options{})
	return db
}

// WrapSQL returns the DB of an open database/sql pool through the driver
// named name (SQLite or Postgres), for tests that open a database of their
// own (another process's view of a file, a pool of another size).
func WrapSQL(name string, db *sql.DB, source string) *DB[*sql.Tx] {
	for _, d := range sqlDrivers {
		if d.name == name {
			return d.wrap(db, source)
		}
	}
	panic("testdb: no database/sql driver " + name)
}

// OpenSQL returns a fresh database of the database/sql driver named name,
// and false for a driver of another transaction type.
func OpenSQL(t testing.TB, name string) (*DB[*sql.Tx], bool) {
	for _, d := range sqlDrivers {
		if d.name == name {
			return d.open(t), true
		}
	}
	return nil, false
}

// OpenPgx returns a fresh database of the pgx driver named name, and false
// for a driver of another transaction type.
func OpenPgx(t testing.TB, name string) (*DB[pgx.Tx], bool) {
	for _, d := range pgxDrivers {
		if d.name == name {
			return d.open(t), true
		}
	}
	return nil, false
}

// FreshLike returns a fresh database of d's driver, for a test that needs
// a second one.
func FreshLike[TTx any](t testing.TB, d *DB[TTx]) *DB[TTx] {
	t.Helper()
	if fresh, ok := OpenSQL(t, d.Name); ok {
		return any(fresh).(*DB[TTx])
	}
	if fresh, ok := OpenPgx(t, d.Name); ok {
		return any(fresh).(*DB[TTx])
	}
	t.Fatalf("testdb: no driver %s", d.Name)
	return nil
}

// HoldRecord locks the ledger record of scope and key against writes from
// other sessions, in a transaction of its own on d.SQL, until the returned
// function is called (at the latest when the test ends): a row lock (FOR
// UPDATE) on PostgreSQL and MySQL, the database's write lock (BEGIN
// IMMEDIATE) on SQLite, where no lock is finer. The record need not exist.
func (d *DB[TTx]) HoldRecord(t testing.TB, scope, key string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.SQL.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE takes the write lock
	if err != nil {
		t.Fatalf("testdb: hold record: %v", err)
	}
	if d.Engine != "sqlite" {
		q := Rebind(d.Engine, `SELECT COUNT(*) FROM (SELECT 1 FROM idempotency_ledger WHERE scope = ? AND "key" = ? FOR UPDATE) AS l`)
		var n int
		if err := tx.QueryRowContext(ctx, q, scope, key).Scan(&n); err != nil {
			tx.Rollback()
			t.Fatalf("testdb: hold record: %v", err)
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Rollback(); err != nil {
				t.Errorf("testdb: release record: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// OutcomeLimit returns the size in bytes from which d's driver refuses to
// store an outcome (ledger.ErrOutcomeTooLarge), an outcome's body of that
// many bytes being refused for sure (the row or message holds more). Where
// the engine's limit is too large for a test to reach, it is lowered to
// 1 MiB for the rest of the test: on SQLite the engine's own
// SQLITE_LIMIT_LENGTH, on the only connection d.SQL keeps from then on;
// on PostgreSQL the drivers' check before sending (the server's 1 GB
// field). On MySQL it is the server's max_allowed_packet, unchanged.
func (d *DB[TTx]) OutcomeLimit(t testing.TB) int64 {
	t.Helper()
	const lowered = 1 << 20
	ctx := context.Background()
	switch d.Engine {
	case "sqlite":
		d.SQL.SetMaxOpenConns(1)
		c, err := d.SQL.Conn(ctx)
		if err != nil {
			t.Fatalf("testdb: outcome limit: %v", err)
		}
		defer c.Close()
		if _, err := msqlite.Limit(c, 0, lowered); err != nil { // SQLITE_LIMIT_LENGTH
			t.Fatalf("testdb: outcome limit: %v", err)
		}
		return lowered
	case "postgres":
		was := pgerr.MaxOutcome
		pgerr.MaxOutcome = lowered
		t.Cleanup(func() { pgerr.MaxOutcome = was })
		return lowered
	}
	var packet int64
	if err := d.SQL.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		t.Fatalf("testdb: outcome limit: %v", err)
	}
	return packet
}
