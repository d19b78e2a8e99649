package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

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
	return sqlDB(Postgres, "postgres", postgres.New(db), db, dsn)
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
		Name: PgxV5, Engine: "postgres", Driver: pgxv5.New(pool), SQL: db, Source: dsn, Serial: serial["postgres"],
		closeDB: pool.Close,
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

// PostgresDSN returns a database/sql pool (pgx's stdlib) on a fresh schema
// of its own in the database named by PostgresEnv, migrated with
// schema.Migrate, and the connection string of that schema, for tests that
// connect again (from another process, with pgx, ...): every connection
// has that schema alone on its search_path. The schema is dropped and the
// pool closed when the test ends. It skips the test, with a message naming
// PostgresEnv, when the variable is unset; any other failure ends the
// test.
func PostgresDSN(t testing.TB) (db *sql.DB, dsn string) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(skipMessage)
	}
	var b [8]byte
	rand.Read(b[:])
	name := "idemledger_test_" + hex.EncodeToString(b[:])

	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer admin.Close()
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("testdb: %s=%s: %v", PostgresEnv, base, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("testdb: %v", err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Errorf("testdb: drop schema: %v", err)
		}
	})

	dsn, err = withSearchPath(base, name)
	if err != nil {
		t.Fatalf("testdb: %s: %v", PostgresEnv, err)
	}
	db, err = sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	db.SetMaxOpenConns(maxPostgresConns)
	t.Cleanup(func() { db.Close() }) // runs before the schema is dropped
	if err := schema.Migrate(ctx, postgres.New(db)); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return db, dsn
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
