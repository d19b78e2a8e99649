// Package testledger gives the examples' tests idemhttp middlewares on
// fresh, migrated databases of each engine. It is the one place of this
// module that calls the ledger's and idemhttp's constructors: when
// idemhttp.Middleware takes only the ledger, only this file changes.
package testledger

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

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
	var d *testdb.DB[*sql.Tx]
	switch engine {
	case "sqlite":
		d = testdb.SQLiteDB(t, sqlite.Options{})
	case "postgres":
		d = testdb.PostgresDB(t)
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	drv := d.Driver
	l, err := ledger.New(drv, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts)
}

// MiddlewareOn returns idemhttp.Middleware with opts on a SQLite ledger
// over db, which the caller opened (to close it, say).
func MiddlewareOn(t testing.TB, db *sql.DB, opts idemhttp.Options) func(http.Handler) http.Handler {
	t.Helper()
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts)
}
