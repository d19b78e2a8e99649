package idemhttp

import (
	"database/sql"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// TestNestedMiddleware: a Middleware inside another of the same ledger
// (one around the mux, one around a route) passes the request through to
// the handler under the outer claim: the handler runs once and retries
// replay. It used to find the outer claim and answer 409 for ever.
func TestNestedMiddleware(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := &bundle{e: e}
		opts := Options{Scope: func(*http.Request) (string, error) { return testScope, nil }}
		nest := func(mw func(http.Handler) http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("POST /pay", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b.calls.Add(1)
				w.WriteHeader(201)
				w.Write([]byte("paid"))
			})))
			return mw(mux)
		}
		sv := serveOn(t, e, ledger.Options{},
			func(l *ledger.Ledger[*sql.Tx]) http.Handler { return nest(Middleware(l, opts)) },
			func(l *ledger.Ledger[pgx.Tx]) http.Handler { return nest(Middleware(l, opts)) })
		b.l, b.db = sv.l, sv.db
		b.srv = serve(t, sv.handler)
		for i, want := range []string{"", "true"} {
			a := b.do(t, "POST", "/pay", `{}`, "k")
			if a.status != 201 || a.body != "paid" || a.header.Get(DefaultReplayHeader) != want {
				t.Fatalf("request %d: %d %q replayed %q; want 201 paid %q", i, a.status, a.body, a.header.Get(DefaultReplayHeader), want)
			}
		}
		if n := b.calls.Load(); n != 1 {
			t.Fatalf("handler ran %d times, want 1", n)
		}
	})
}
