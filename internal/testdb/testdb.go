// Package testdb gives tests fresh, migrated databases: real engines, never
// mocks, each reached through one of the ledger's drivers. Each runs a test
// body on every driver. Every engine has one file here that registers its
// drivers and holds its Engine, the one place a test's engine-specific
// statement or probe lives: tests name capabilities, never engines.
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	msqlite "modernc.org/sqlite"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/pgerr"
	"github.com/idemledger/idemledger/schema"
)

// The registry of drivers under test: each engine's file (sqlite.go,
// postgres.go, mysql.go) registers its drivers from its init function,
// with the function that opens a fresh, migrated database through each,
// and every behaviour test runs on them. sqlDrivers take *[sql.Tx],
// pgxDrivers pgx.Tx. A new engine adds a file here, and no test changes.
var (
	sqlDrivers []*sqlEntry
	pgxDrivers []*pgxEntry
)

// sqlEntry is a database/sql driver under test.
type sqlEntry struct {
	name   string
	engine *Engine
	open   func(testing.TB) *DB[*sql.Tx]
	// wrap is the driver over a pool the test opened itself.
	wrap func(db *sql.DB, source string) *DB[*sql.Tx]
	// connect opens another pool on source, as another process would.
	connect func(source string, o Conns) (*sql.DB, error)
	// faulty opens source behind a fault injector (see NewFaulty) and
	// returns the driver over it.
	faulty func(t testing.TB, source string, maxConns int, f *faults) any
}

// pgxEntry is a driver of pgx.Tx under test; its databases are made by
// the database/sql driver sibling names, whose SQL it shares.
type pgxEntry struct {
	name    string
	sibling string
	engine  *Engine
	open    func(testing.TB) *DB[pgx.Tx]
	connect func(source string, db *sql.DB, o Conns) (*DB[pgx.Tx], func(), error)
	faulty  func(t testing.TB, source string, maxConns int, f *faults) any
}

// Conns says how a pool that another process opens (Connect) behaves.
type Conns struct {
	// Max bounds the pool's connections (0: the driver's default).
	Max int
	// LockWait raises how long a statement waits for a lock, where the
	// engine's default is short (SQLite's busy_timeout); 0 keeps it.
	LockWait time.Duration
}

// registerSQL and registerPgx add drivers to the registry, in name
// order after SQLite, the default engine, which stays first.
func registerSQL(e *sqlEntry) {
	sqlDrivers = append(sqlDrivers, e)
	slices.SortStableFunc(sqlDrivers, func(a, b *sqlEntry) int { return byName(a.name, b.name) })
}

func registerPgx(e *pgxEntry) {
	pgxDrivers = append(pgxDrivers, e)
	slices.SortStableFunc(pgxDrivers, func(a, b *pgxEntry) int { return byName(a.name, b.name) })
}

func byName(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == SQLite:
		return -1
	case b == SQLite:
		return 1
	}
	return strings.Compare(a, b)
}

// Engine is what the tests know of one database engine, beyond the
// ledger's driver: its SQL dialect and the ways it locks, which a test of
// a guarantee must name to provoke or observe it. Each engine's file holds
// its one Engine; tests reach it as [DB.Eng] or through [EngineOf], and never
// name an engine themselves.
type Engine struct {
	// Name is the engine's name ("sqlite", "postgres", "mysql"): that of
	// its directory in package schema.
	Name string
	// Serial is the column definition of an auto-numbered bigint primary
	// key named id, for the tests' own tables:
	// "CREATE TABLE orders (" + Serial + ", item TEXT NOT NULL)".
	Serial string
	// rebind turns a test's statement, written with ? placeholders and
	// standard double-quoted identifiers, into the engine's (see Rebind).
	rebind func(query string) string
	// RefuseKey are statements that make every insert of the key
	// "refused" into the ledger's table fail with the message "refused
	// key" (a trigger).
	RefuseKey []string
	// LockLedger is a statement that, inside a transaction, keeps every
	// other session from writing the ledger's table until the
	// transaction ends; "" when beginning the transaction does that alone
	// (the driver's BeginLocks).
	LockLedger string
	// LockWait tells whether a session waits for a row lock; nil where a
	// transaction never does (its BEGIN took the lock).
	LockWait *LockWait
	// SavepointOutsideTx says what a SAVEPOINT outside any transaction
	// block does, "" when it fails (as on PostgreSQL).
	SavepointOutsideTx string
	// WritesNothing checks, the engine's way, that the answers q gives
	// from a plain read write nothing and take no lock (see Quiet).
	WritesNothing func(t *testing.T, q Quiet)
	// Series is a subquery of the integers 1..n, in a column named n.
	Series func(n int) string
	// URL is the Source of a database of the engine as a URL that tools
	// take (idemledger's -db): the SQLite file's path, a postgres:// or
	// mysql:// URL.
	URL func(t testing.TB, source string) string
	// ProcessConns, when not 0, is how many connections each of several
	// processes that write one database at once should hold, where the
	// engine wants fewer than a service's pool.
	ProcessConns int
}

// LockWait is an engine's probe of lock waits: Session is the query of
// the current session's id (one integer); Waiting (with that id as its one
// parameter, in the engine's placeholder syntax) tells whether the session
// waits for a lock.
type LockWait struct{ Session, Waiting string }

// Quiet is what an engine's WritesNothing check runs. The ledger's table
// holds two standing records, "done" (completed) and "held" (in flight
// under a live lease), and the test's orders table exists.
type Quiet struct {
	// SQL reaches the database ([DB.SQL]).
	SQL *sql.DB
	// Answer gives every answer a plain read may give once (a replay, a
	// lookup, a key reused, a key in flight) and checks each.
	Answer func(t *testing.T)
	// Mutate runs ledger.Mutate once per standing request (the replay,
	// the key reused, the key in flight), each in a transaction of its
	// own through the driver: setup first (when not ""), then Mutate,
	// whose callback returns "ran", then query (when not ""), then the
	// commit. It reports each run.
	Mutate func(t *testing.T, setup, query string) []Mutated
}

// Mutated is one run of [Quiet.Mutate]: Request names it; Ran says the
// callback ran, Busy that Mutate failed with ledger.ErrBusy; Query is
// what the query returned; Err is Mutate's error.
type Mutated struct {
	Request   string
	Ran, Busy bool
	Query     int64
	Err       error
}

// EngineOf returns the Engine of a driver or engine name, nil for a name
// no entry has.
func EngineOf(name string) *Engine {
	for _, d := range sqlDrivers {
		if d.name == name || d.engine.Name == name {
			return d.engine
		}
	}
	for _, d := range pgxDrivers {
		if d.name == name || d.engine.Name == name {
			return d.engine
		}
	}
	return nil
}

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
	// Name is the driver's name (one of Drivers); Engine the database
	// engine's (Eng.Name), whose helpers Eng holds.
	Name, Engine string
	Eng          *Engine
	// Driver is the ledger's driver over the database.
	Driver Driver[TTx]
	// Serial is Eng.Serial.
	Serial string
	// SQL reaches the same database through database/sql, for setup and
	// assertions; it is the driver's own pool on the database/sql
	// drivers.
	SQL *sql.DB
	// Source is what reaches the database again, in the form of its
	// database package: a file's path, a connection URL or DSN (on
	// PostgreSQL with the test's schema on its search_path).
	Source string
	// StepsWithCommit reports that a database step's record, written in
	// the driver's own transaction, travels with its COMMIT instead of
	// being sent at once (pgxv5 in a query mode that batches), so that a
	// stale fence is refused by the commit.
	StepsWithCommit bool

	closeDB func()
	exec    func(ctx context.Context, tx TTx, query string, args ...any) error
	query   func(ctx context.Context, tx TTx, query string, args ...any) (int64, error)
}

// CloseDriverDB closes the database handle the driver holds (the *[sql.DB],
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
// sqlBody on the database/sql drivers (transactions are *sql.Tx), pgxBody
// on pgx's (pgx.Tx). Write the body once, generic in TTx, and pass both
// instances: testdb.Each(t, body[*sql.Tx], body[pgx.Tx]). The
// subtests of a server's engine skip, naming its variable, when it is
// unset.
func Each(t *testing.T, sqlBody func(*testing.T, *DB[*sql.Tx]), pgxBody func(*testing.T, *DB[pgx.Tx])) {
	t.Helper()
	for _, d := range sqlDrivers {
		t.Run(d.name, func(t *testing.T) { sqlBody(t, d.open(t)) })
	}
	for _, d := range pgxDrivers {
		t.Run(d.name, func(t *testing.T) { pgxBody(t, d.open(t)) })
	}
}

// EachAtOnce is [Each] with the drivers' subtests running at the same
// time, each from a goroutine of its own; it returns when all have ended.
// It is for tests that spend their time waiting (for a lease to run out,
// a lock timeout, a silent network) rather than computing: their waits
// overlap, whatever the number of CPUs (go test's -parallel does not bound
// these subtests). The bodies must share nothing but their own database:
// no package variable they set, no environment (t.Setenv), no
// fault injector of another driver's.
func EachAtOnce(t *testing.T, sqlBody func(*testing.T, *DB[*sql.Tx]), pgxBody func(*testing.T, *DB[pgx.Tx])) {
	t.Helper()
	var wg sync.WaitGroup
	for _, d := range sqlDrivers {
		wg.Go(func() { t.Run(d.name, func(t *testing.T) { sqlBody(t, d.open(t)) }) })
	}
	for _, d := range pgxDrivers {
		wg.Go(func() { t.Run(d.name, func(t *testing.T) { pgxBody(t, d.open(t)) }) })
	}
	wg.Wait()
}

// EachSQL runs body on the database/sql drivers only: for tests of what only database/sql has (a *[sql.Conn], a
// faulty database/sql driver). Say why at the call.
func EachSQL(t *testing.T, body func(*testing.T, *DB[*sql.Tx])) {
	t.Helper()
	for _, d := range sqlDrivers {
		t.Run(d.name, func(t *testing.T) { body(t, d.open(t)) })
	}
}

// sqlDB is the DB of a database/sql pool through driver d, named name,
// of engine e.
func sqlDB(name string, e *Engine, d Driver[*sql.Tx], db *sql.DB, source string) *DB[*sql.Tx] {
	return &DB[*sql.Tx]{
		Name: name, Engine: e.Name, Eng: e, Driver: d, SQL: db, Source: source, Serial: e.Serial,
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

// Rebind rewrites query, a test's statement written with ? placeholders
// and standard double-quoted identifiers, for an engine or driver name:
// each engine's entry says how ($1, $2, ... on PostgreSQL; backquoted
// identifiers on MySQL, where the ledger's "key" column is a reserved
// word). It does not look inside string literals: keep question marks and
// double quotes out of them. An unknown name leaves query as it is.
func Rebind(engine, query string) string {
	if e := EngineOf(engine); e != nil && e.rebind != nil {
		return e.rebind(query)
	}
	return query
}

// dollars numbers the ? placeholders of query: $1, $2, ...
func dollars(query string) string {
	if !strings.Contains(query, "?") {
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

// WrapSQL returns the DB of an open database/sql pool through the driver
// named name (a database/sql one), for tests that open a database of their
// own (another process's view of a file, a pool of another size).
func WrapSQL(name string, db *sql.DB, source string) *DB[*sql.Tx] {
	for _, d := range sqlDrivers {
		if d.name == name {
			return d.wrap(db, source)
		}
	}
	panic("testdb: no database/sql driver " + name)
}

// SQLDrivers lists the database/sql drivers' names, one per engine (the
// first of each engine), for tools that open a database by its engine,
// such as the command line.
func SQLDrivers() []string {
	var names []string
	seen := map[string]bool{}
	for _, d := range sqlDrivers {
		if !seen[d.engine.Name] {
			seen[d.engine.Name] = true
			names = append(names, d.name)
		}
	}
	return names
}

// Connect reaches the database at source, a DB's Source made by the
// driver named name, through a pool of its own, as another process of
// the test would, and runs sqlBody or pgxBody (by the driver's
// transaction type) on it; the pool is closed when the body returns.
func Connect(name, source string, o Conns, sqlBody func(*DB[*sql.Tx]), pgxBody func(*DB[pgx.Tx])) error {
	for _, d := range sqlDrivers {
		if d.name == name {
			db, err := d.connect(source, o)
			if err != nil {
				return err
			}
			defer db.Close()
			sqlBody(d.wrap(db, source))
			return nil
		}
	}
	for _, d := range pgxDrivers {
		if d.name == name {
			sib := sqlEntryNamed(d.sibling)
			db, err := sib.connect(source, o)
			if err != nil {
				return err
			}
			defer db.Close()
			pd, closePool, err := d.connect(source, db, o)
			if err != nil {
				return err
			}
			defer closePool()
			pgxBody(pd)
			return nil
		}
	}
	return fmt.Errorf("testdb: no driver %s", name)
}

// SQLSibling is the database/sql driver that makes the databases of the
// driver named name: name itself for a database/sql driver.
func SQLSibling(name string) string {
	for _, d := range pgxDrivers {
		if d.name == name {
			return d.sibling
		}
	}
	return name
}

func sqlEntryNamed(name string) *sqlEntry {
	for _, d := range sqlDrivers {
		if d.name == name {
			return d
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
