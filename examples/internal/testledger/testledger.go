// Package testledger gives the examples' tests idemhttp middlewares on
// fresh, migrated databases of every driver (through internal/testmw), and
// on a SQLite database the test opened itself.
package testledger

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testmw"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// Each runs f once per driver, as subtests named after them.
func Each(t *testing.T, f func(t *testing.T, engine string)) { testmw.Each(t, f) }

// Middleware returns idemhttp.Middleware with opts on a fresh ledger of
// the driver named engine (a name of testdb.Drivers).
func Middleware(t testing.TB, engine string, opts idemhttp.Options) func(http.Handler) http.Handler {
	t.Helper()
	mw, _ := testmw.Middleware(t, engine, opts)
	return mw
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
