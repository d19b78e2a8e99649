package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/internal/pgxbatch"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

// Postgres and PgxV5 name the drivers under test of PostgreSQL: postgres
// (database/sql) and pgxv5 (pgx's native API).
const (
	Postgres = "postgres"
	PgxV5    = "pgxv5"
)

// postgresEngine is PostgreSQL: a schema of its own per test (or, through
// a pooler, a database), on the server PostgresEnv names.
var postgresEngine = &Engine{
	Name:   "postgres",
	Serial: "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	rebind: dollars,
	RefuseKey: []string{
		`CREATE FUNCTION refuse_key() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   IF NEW.key = 'refused' THEN RAISE EXCEPTION 'refused key'; END IF;
		   RETURN NEW;
		 END $$`,
		`CREATE TRIGGER refuse_key BEFORE INSERT ON idempotency_ledger
		 FOR EACH ROW EXECUTE FUNCTION refuse_key()`,
	},
	LockLedger: "LOCK TABLE idempotency_ledger IN EXCLUSIVE MODE",
	LockWait: &LockWait{"SELECT pg_backend_pid()",
		`SELECT wait_event_type IS NOT DISTINCT FROM 'Lock' FROM pg_stat_activity WHERE pid = $1`},
	WritesNothing: postgresWritesNothing,
	Series:        func(n int) string { return fmt.Sprintf("SELECT generate_series(1, %d) AS n", n) },
	URL:           func(_ testing.TB, source string) string { return source },
}

func init() {
	registerSQL(&sqlEntry{
		name:   Postgres,
		engine: postgresEngine,
		open:   PostgresDB,
		wrap: func(db *sql.DB, source string) *DB[*sql.Tx] {
			return sqlDB(Postgres, postgresEngine, postgres.New(db), db, source)
		},
		connect: func(source string, o Conns) (*sql.DB, error) {
			db, err := sql.Open("pgx", source)
			if err == nil && o.Max > 0 {
				db.SetMaxOpenConns(o.Max)
			}
			return db, err
		},
		faulty: func(t testing.TB, source string, maxConns int, f *faults) any {
			db, err := sql.Open("pgx", postgresProxy(t, source, f))
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			db.SetMaxOpenConns(maxConns)
			t.Cleanup(func() { db.Close() })
			return postgres.New(db)
		},
	})
	registerPgx(&pgxEntry{
		name:    PgxV5,
		sibling: Postgres,
		engine:  postgresEngine,
		open:    PgxDB,
		connect: func(source string, db *sql.DB, o Conns) (*DB[pgx.Tx], func(), error) {
			cfg, err := pgxpool.ParseConfig(source)
			if err != nil {
				return nil, nil, err
			}
			if o.Max > 0 {
				cfg.MaxConns = int32(o.Max)
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				return nil, nil, err
			}
			return WrapPgx(pool, db, source), pool.Close, nil
		},
		faulty: func(t testing.TB, source string, maxConns int, f *faults) any {
			cfg, err := pgxpool.ParseConfig(postgresProxy(t, source, f))
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			if maxConns > 0 {
				cfg.MaxConns = int32(maxConns)
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			t.Cleanup(pool.Close)
			return pgxv5.New(pool)
		},
	})
}

// postgresProxy puts a faultnet proxy in front of source's server and
// returns source through it; pgx spells the commit "commit".
func postgresProxy(t testing.TB, source string, f *faults) string {
	u, err := url.Parse(source)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if f.Proxy, err = faultnet.Listen(u.Host); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { f.Proxy.Close() })
	u.Host = f.Proxy.Addr()
	f.Commit = "commit"
	return u.String()
}

// postgresWritesNothing: the standing row is never locked nor rewritten
// (its xmax and ctid stay as they were; a no-op upsert would lock it), and
// a transaction that answers through Mutate is assigned no transaction
// id, so its commit writes no WAL.
func postgresWritesNothing(t *testing.T, q Quiet) {
	// xmax is set by any row lock (a no-op ON CONFLICT DO UPDATE takes
	// one) and ctid moves with any update.
	rowVersion := func() string {
		var v string
		if err := q.SQL.QueryRow(`SELECT xmax::text || ' ' || ctid::text FROM idempotency_ledger WHERE key = 'done'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := rowVersion()
	for range 5 {
		q.Answer(t)
	}
	if after := rowVersion(); after != before || before[:2] != "0 " {
		t.Errorf("xmax, ctid of the completed row: %q before the replays, %q after; want unchanged, xmax 0", before, after)
	}
	for _, m := range q.Mutate(t, "", `SELECT COALESCE(pg_current_xact_id_if_assigned()::text::bigint, 0)`) {
		if m.Query != 0 {
			t.Errorf("Mutate(%s) = ran %t, %v: the transaction got transaction id %d; want none (no write)", m.Request, m.Ran, m.Err, m.Query)
		}
	}
}

// PostgresEnv names the environment variable that points the tests at a
// PostgreSQL server, as a pgx connection string, for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. The role needs
// the right to create schemas in that database. Without it the PostgreSQL
// tests are skipped; .ci/run always sets it.
const PostgresEnv = "IDEMLEDGER_TEST_POSTGRES"

// maxPostgresConns bounds each test's pool. The server allows 100
// connections by default, and `go test ./...` runs several packages (and
// 4-process tests) at once.
const maxPostgresConns = 12

// PostgresDB returns a fresh PostgreSQL schema through the postgres
// driver (database/sql over pgx's stdlib); see PostgresDSN.
func PostgresDB(t testing.TB) *DB[*sql.Tx] {
	t.Helper()
	db, dsn := PostgresDSN(t)
	return sqlDB(Postgres, postgresEngine, postgres.New(db), db, dsn)
}

// PgxDB returns a fresh PostgreSQL schema through the pgxv5 driver, on a
// *pgxpool.Pool of its own (closed when the test ends); SQL is a
// database/sql pool on the same schema, for assertions.
func PgxDB(t testing.TB) *DB[pgx.Tx] {
	t.Helper()
	db, dsn := PostgresDSN(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	cfg.MaxConns = maxPostgresConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the schema is dropped
	return WrapPgx(pool, db, dsn)
}

// WrapPgx returns the DB of an open pgx pool through the pgxv5 driver; db
// reaches the same database through database/sql.
func WrapPgx(pool *pgxpool.Pool, db *sql.DB, dsn string) *DB[pgx.Tx] {
	return &DB[pgx.Tx]{
		Name: PgxV5, Engine: postgresEngine.Name, Eng: postgresEngine, Driver: pgxv5.New(pool), SQL: db, Source: dsn, Serial: postgresEngine.Serial,
		StepsWithCommit: pgxbatch.Of(pool.Config().ConnConfig) != pgxbatch.None,
		closeDB:         pool.Close,
		exec: func(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
			_, err := tx.Exec(ctx, query, args...)
			return err
		},
		query: func(ctx context.Context, tx pgx.Tx, query string, args ...any) (n int64, err error) {
			err = tx.QueryRow(ctx, query, args...).Scan(&n)
			return n, err
		},
	}
}

// skipMessage is why a PostgreSQL test is skipped.
const skipMessage = "PostgreSQL tests skipped: set " + PostgresEnv + " (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them"

// PgBouncerEnv names the environment variable that sends the PostgreSQL
// tests through a pooler (PgBouncer), as a pgx connection string of the
// pooler, for example
// postgres://postgres@127.0.0.1:6432/test?sslmode=disable&default_query_exec_mode=exec.
// The pooler must map every database name to the server of [PostgresEnv] (a
// wildcard entry, "* = host=127.0.0.1 port=5432"), which stays set: each
// test gets a database of its own, made and dropped over PostgresEnv's
// direct connection and reached through the pooler, since PgBouncer refuses
// the search_path startup parameter that the direct tests isolate
// themselves with. The database name in the pooler's URL is replaced.
// .ci/pgbouncer sets it for one run through each pooling mode.
const PgBouncerEnv = "IDEMLEDGER_TEST_PGBOUNCER"

// PgBouncerModeEnv names the environment variable that says how the
// pooler of [PgBouncerEnv] pools: "transaction" (the default) or "session".
// Tests of what only one mode allows read it through Pooling.
const PgBouncerModeEnv = "IDEMLEDGER_TEST_PGBOUNCER_MODE"

// Pooling returns how the PostgreSQL tests reach the server: "" directly,
// "transaction" or "session" through the pooler of PgBouncerEnv.
func Pooling() string {
	if os.Getenv(PgBouncerEnv) == "" {
		return ""
	}
	if m := os.Getenv(PgBouncerModeEnv); m != "" {
		return m
	}
	return "transaction"
}

// PostgresDSN returns a database/sql pool (pgx's stdlib) on a fresh
// PostgreSQL namespace of its own, migrated with [schema.Migrate], and the
// connection string that reaches it, for tests that connect again (from
// another process, with pgx, ...). Directly ([PostgresEnv] alone) the
// namespace is a schema in PostgresEnv's database, alone on the
// search_path of every connection of that string; through a pooler
// ([PgBouncerEnv]) it is a database of its own, whose public schema holds
// the tables. It is dropped (a pooled database: emptied) and the pool
// closed when the test ends. It
// skips the test, with a message naming PostgresEnv, when the variable is
// unset; any other failure ends the test.
func PostgresDSN(t testing.TB) (db *sql.DB, dsn string) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(skipMessage)
	}
	var b [8]byte
	rand.Read(b[:])
	name := "idemledger_test_" + hex.EncodeToString(b[:])

	var err error
	if pooler := os.Getenv(PgBouncerEnv); pooler != "" {
		dsn, err = pooledDatabase(t, base, pooler, name)
	} else {
		dsn, err = ownSchema(t, base, name)
	}
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	db, err = sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	db.SetMaxOpenConns(maxPostgresConns)
	t.Cleanup(func() { db.Close() }) // runs before the namespace is dropped
	if err := schema.Migrate(context.Background(), postgres.New(db)); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return db, dsn
}

// ownSchema creates the schema name in base's database, to be dropped
// when t ends, and returns base with that schema alone on its search_path.
func ownSchema(t testing.TB, base, name string) (string, error) {
	if err := admin(base, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("%s=%s: %w", PostgresEnv, base, err)
	}
	t.Cleanup(func() {
		if err := admin(base, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("testdb: drop schema: %v", err)
		}
	})
	dsn, err := withSearchPath(base, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", PostgresEnv, err)
	}
	return dsn, nil
}

// pooledDatabase returns pooler's connection string with a database of
// t's own in place of its own: a database of the process's free list
// (see pooled), or one it creates over base, the direct connection. When t
// ends, the database is emptied and goes back on the list: making and
// dropping a database per test costs 0.3 to 1 s on this server, emptying
// one a few milliseconds.
func pooledDatabase(t testing.TB, base, pooler, _ string) (string, error) {
	u, err := url.Parse(pooler)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL: %q", PgBouncerEnv, pooler)
	}
	name, err := pooled.take(base)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", PostgresEnv, base, err)
	}
	direct, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%s: %w", PostgresEnv, err)
	}
	direct.Path = "/" + name
	t.Cleanup(func() {
		// The test's pools are closed by now; the pooler may keep its
		// server connections, which see the emptied schema next time.
		if err := admin(direct.String(), "DROP SCHEMA public CASCADE; CREATE SCHEMA public; ALTER DATABASE "+name+" RESET ALL"); err != nil {
			t.Errorf("testdb: empty database %s: %v", name, err)
			return
		}
		pooled.put(name)
	})
	u.Path = "/" + name
	return u.String(), nil
}

// pooled is the process's free list of databases for the tests through a
// pooler. They are named after the process (idemledger_test_PID_N) and
// outlive it; the first process to take one drops those of processes that
// are gone.
var pooled databases

type databases struct {
	mu    sync.Mutex
	swept bool
	free  []string
	made  int
}

func (d *databases) take(base string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.swept {
		d.swept = true
		d.sweep(base)
	}
	if n := len(d.free); n > 0 {
		name := d.free[n-1]
		d.free = d.free[:n-1]
		return name, nil
	}
	d.made++
	name := fmt.Sprintf("%s%d_%d", pooledPrefix, os.Getpid(), d.made)
	return name, admin(base, "CREATE DATABASE "+name)
}

func (d *databases) put(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.free = append(d.free, name)
}

const pooledPrefix = "idemledger_test_"

// sweep drops the pooled databases of processes that no longer run, best
// effort: a database it misses is dropped by a later run.
func (d *databases) sweep(base string) {
	db, err := sql.Open("pgx", base)
	if err != nil {
		return
	}
	defer db.Close()
	rows, err := db.Query("SELECT datname FROM pg_database WHERE datname LIKE '" + pooledPrefix + "%'")
	if err != nil {
		return
	}
	var stale []string
	for rows.Next() {
		var name string
		if rows.Scan(&name) != nil {
			continue
		}
		pid, _, ok := strings.Cut(strings.TrimPrefix(name, pooledPrefix), "_")
		n, err := strconv.Atoi(pid)
		if ok && err == nil && !running(n) {
			stale = append(stale, name)
		}
	}
	rows.Close()
	for _, name := range stale {
		db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	}
}

// admin runs stmt over a connection of its own to dsn.
func admin(dsn, stmt string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(context.Background(), stmt)
	return err
}

// withSearchPath adds search_path=schema to a pgx connection string, URL
// or keyword/value form; pgx sends it to the server as a run-time
// parameter of every connection.
func withSearchPath(dsn, schema string) (string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
