package idemhttp

import (
	"database/sql"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// The whole point, end to end: the server runs the handler, the answer is
// lost on the way back (the connection drops), and the Transport's retry
// gets the stored answer without running the handler again.
func TestTransportAndMiddlewareLostResponse(t *testing.T) {
	eachEngine(t, func(t *testing.T, e testdb.Engine) {
		db := testdb.Open(t, e)
		l, err := ledger.New(ledger.Config{Engine: engines[e]})
		if err != nil {
			t.Fatal(err)
		}
		var runs, attempts atomic.Int32
		protected := Middleware(l, db, Options{Scope: func(*http.Request) (string, error) { return "t", nil }})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				body, _ := io.ReadAll(r.Body)
				w.Header().Set("Location", "/charges/1")
				w.WriteHeader(http.StatusCreated)
				w.Write(body)
			}))
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if attempts.Add(1) == 1 {
				// Serve the request in full, then lose the answer: the
				// recorder stands for the bytes that never arrive.
				protected.ServeHTTP(httptest.NewRecorder(), r)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			protected.ServeHTTP(w, r)
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		defer srv.Close()

		c := &http.Client{Transport: fastTransport()}
		resp, err := c.Post(srv.URL+"/charges", "application/json", strings.NewReader(`{"amount":5}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 || string(body) != `{"amount":5}` || resp.Header.Get("Location") != "/charges/1" ||
			resp.Header.Get(DefaultReplayHeader) != "true" {
			t.Fatalf("got %d %q %q", resp.StatusCode, body, resp.Header)
		}
		if runs.Load() != 1 || attempts.Load() != 2 {
			t.Fatalf("handler ran %d times over %d attempts, want 1 over 2", runs.Load(), attempts.Load())
		}
	})
}

func TestConstructorsRefuseMissingParts(t *testing.T) {
	db := testdb.SQLite(t)
	l, _ := ledger.New(ledger.Config{})
	scope := func(*http.Request) (string, error) { return "", nil }
	noop := func(http.ResponseWriter, *http.Request, *sql.Tx) {}
	for name, f := range map[string]func(){
		"nil scope":       func() { Middleware(l, db, Options{}) },
		"nil ledger":      func() { Middleware(nil, db, Options{Scope: scope}) },
		"nil db":          func() { Middleware(l, nil, Options{Scope: scope}) },
		"tx nil scope":    func() { TxHandler(l, db, Options{}, noop) },
		"tx nil function": func() { TxHandler(l, db, Options{Scope: scope}, nil) },
		"tx nil ledger":   func() { TxHandler(nil, db, Options{Scope: scope}, noop) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
