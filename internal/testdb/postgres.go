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

	// The pgx database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"

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

// Postgres returns a pool on a fresh schema of its own in the database
// named by PostgresEnv, migrated with schema.MigratePostgres: every
// connection of the pool has that schema alone on its search_path. The
// schema is dropped and the pool closed when the test ends. It skips the
// test, with a message naming PostgresEnv, when the variable is unset; any
// other failure ends the test.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := PostgresDSN(t)
	return db
}

// PostgresDSN is Postgres, and it also returns the connection string of
// the test's schema, for tests that connect again (from another process,
// for example).
func PostgresDSN(t testing.TB) (db *sql.DB, dsn string) {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set " + PostgresEnv + " (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
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
	if err := schema.MigratePostgres(ctx, db); err != nil {
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
