package idemfiber_test

// The module's tests get their databases from internal/testdb, as
// idemgin's do (a module nested under the main module's path may import
// its internal packages): fresh, migrated databases on every driver. The
// package under test itself imports no internal package
// (TestPublicAPIOnly).

import (
	"context"
	"database/sql"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// store is a fresh ledger on one driver, and what a test needs around it.
type store struct {
	l lifecycle.Ledger
	// middleware is idemhttp.Middleware on the same ledger, for the
	// tests of records shared by a Fiber and a net/http service.
	middleware func(idemhttp.Options) func(http.Handler) http.Handler
	get        func(ctx context.Context, scope, key string) (*ledger.Record, error)
	// down closes the database under the ledger: every later operation
	// fails, as when the store is unreachable.
	down func()
}

func open[TTx any](t testing.TB, d *testdb.DB[TTx]) store { return openWith(t, d, ledger.Options{}) }

// openWith is open with the ledger's options o.
func openWith[TTx any](t testing.TB, d *testdb.DB[TTx], o ledger.Options) store {
	t.Helper()
	l, err := ledger.New(d.Driver, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return store{
		l:          l,
		middleware: func(o idemhttp.Options) func(http.Handler) http.Handler { return idemhttp.Middleware(l, o) },
		get:        l.Get,
		down:       d.CloseDriverDB,
	}
}

// eachEngine runs f once per driver (testdb's registry), as subtests
// named after them, each on a fresh ledger.
func eachEngine(t *testing.T, f func(t *testing.T, s store)) { eachEngineWith(t, ledger.Options{}, f) }

// eachEngineWith is eachEngine with the ledger's options o.
func eachEngineWith(t *testing.T, o ledger.Options, f func(t *testing.T, s store)) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { f(t, openWith(t, d, o)) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { f(t, openWith(t, d, o)) })
}
