// Package testmw gives the tests of the integration modules (idemgin,
// examples) idemhttp middlewares on fresh, migrated databases of every
// driver, so that each of those modules calls the ledger's constructors
// in one place, and runs on pgxv5 too.
package testmw

import (
	"context"
	"database/sql"
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// Each runs f once per driver of [testdb.Drivers], as subtests named after
// them; a server engine's ones skip when its variable is unset.
func Each(t *testing.T, f func(t *testing.T, driver string)) {
	for _, d := range testdb.Drivers() {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

// Store is what a test needs of the database behind a middleware: the
// ledger's Get, and the database through database/sql for assertions.
type Store struct {
	Get func(ctx context.Context, scope, key string) (*ledger.Record, error)
	DB  *sql.DB
}

// Middleware returns [idemhttp.Middleware] with opts on a fresh ledger of
// the driver named driver (a name of [testdb.Drivers]), and its
// Store. Any failure ends the test.
func Middleware(t testing.TB, driver string, opts idemhttp.Options) (func(http.Handler) http.Handler, Store) {
	t.Helper()
	if d, ok := testdb.OpenSQL(t, driver); ok {
		return on(t, d, opts)
	}
	if d, ok := testdb.OpenPgx(t, driver); ok {
		return on(t, d, opts)
	}
	t.Fatalf("testmw: unknown driver %q", driver)
	return nil, Store{}
}

func on[TTx any](t testing.TB, d *testdb.DB[TTx], opts idemhttp.Options) (func(http.Handler) http.Handler, Store) {
	t.Helper()
	l, err := ledger.New(d.Driver, ledger.Options{})
	if err != nil {
		t.Fatalf("testmw: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return idemhttp.Middleware(l, opts), Store{Get: l.Get, DB: d.SQL}
}
