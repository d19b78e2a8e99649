package idemgin_test

// The module's tests get their middlewares from internal/testmw: fresh
// databases on every driver, and the middleware on them.

import (
	"net/http"
	"testing"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testmw"
)

// eachEngine runs f once per driver, as subtests named after them.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) { testmw.Each(t, f) }

// middleware returns idemhttp.Middleware with opts on a fresh ledger of
// the driver, and its store, for a test to look its records up.
func middleware(t testing.TB, engine string, opts idemhttp.Options) (func(http.Handler) http.Handler, testmw.Store) {
	t.Helper()
	return testmw.Middleware(t, engine, opts)
}
