// Package testledger gives the examples' tests idemhttp middlewares on
// fresh, migrated databases of each engine. It is the one place of this
// module that calls the ledger's and idemhttp's constructors: when
// idemhttp.Middleware takes only the ledger, only this file changes.
package testledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// PostgresEnv points the PostgreSQL half of the tests at a server, as in
// the main module; without it that half is skipped.
const PostgresEnv = "IDEMLEDGER_TEST_POSTGRES"

// Engines are the engines every test runs on.
var Engines = []string{"sqlite", "postgres"}

// Each runs f once per engine, as subtests named after them.
func Each(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range Engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

// Middleware returns idemhttp.Middleware with opts on a fresh ledger of
// the engine ("sqlite" or "postgres").
func Middleware(t testing.TB, engine string, opts idemhttp.Options) func(http.Handler) http.Handler {
	t.Helper()
	var (
		db  *sql.DB
		drv driver.Driver[*sql.Tx]
	)
	switch engine {
	case "sqlite":
		db = SQLite(t)
		drv = sqlite.New(db)
	case "postgres":
		db = Postgres(t)
		drv = postgres.New(db)
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	l, err := ledger.New(drv, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts)
}

// SQLite opens a fresh SQLite file with package sqlite's defaults (WAL,
// busy_timeout, immediate transactions) and migrates it.
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	return db
}

// Postgres opens a pool on a fresh schema of the database named by
// PostgresEnv, alone on the search_path of every connection, migrates it,
// and drops it when the test ends. It skips the test when PostgresEnv is
// unset.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set " + PostgresEnv + " (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [8]byte
	rand.Read(b[:])
	name := "idemexamples_test_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + name); err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() }) // before the schema is dropped
	if err := schema.Migrate(context.Background(), postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	return db
}

// MiddlewareOn returns idemhttp.Middleware with opts on a SQLite ledger
// over db, which the caller opened (to close it, say).
func MiddlewareOn(t testing.TB, db *sql.DB, opts idemhttp.Options) func(http.Handler) http.Handler {
	t.Helper()
	l, err := ledger.New(sqlite.New(db), ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts)
}
