package idemgin_test

// The one file of this module's tests that calls the ledger and idemhttp's
// constructors: fresh databases on every engine, and the middleware on
// them.

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

var engines = []string{"sqlite", "postgres"}

// eachEngine runs f once per engine, as subtests named after them.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

// middleware returns idemhttp.Middleware with opts on a fresh ledger of
// the engine, the ledger, for a test to look its records up, and the
// database.
func middleware(t testing.TB, engine string, opts idemhttp.Options) (func(http.Handler) http.Handler, *ledger.Ledger[*sql.Tx], *sql.DB) {
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
	db, drv := d.SQL, d.Driver
	l, err := ledger.New(drv, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts), l, db
}
