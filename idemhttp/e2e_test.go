package idemhttp

import (
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// The whole point, end to end: the server runs the handler, the answer is
// lost on the way back (the connection drops), and the Transport's retry
// gets the stored answer without running the handler again.
func TestTransportAndMiddlewareLostResponse(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		db := openSQL(t, e)
		l, err := ledger.New(sqlDriver(e, db), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var runs, attempts atomic.Int32
		protected := Middleware(l, Options{Scope: func(*http.Request) (string, error) { return "t", nil }})(
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
	db := testdb.SQLitePool(t)
	l, _ := ledger.New(sqlite.New(db), ledger.Options{})
	scope := func(*http.Request) (string, error) { return "", nil }
	noop := func(http.ResponseWriter, *http.Request, *sql.Tx) {}
	for name, f := range map[string]func(){
		"nil scope":       func() { Middleware(l, Options{}) },
		"nil ledger":      func() { Middleware[*sql.Tx](nil, Options{Scope: scope}) },
		"tx nil scope":    func() { TxHandler(l, Options{}, noop) },
		"tx nil function": func() { TxHandler(l, Options{Scope: scope}, nil) },
		"tx nil ledger":   func() { TxHandler[*sql.Tx](nil, Options{Scope: scope}, noop) },
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

// A duplicate sent with the default Transport while the first request
// still runs gets 409 with Retry-After 1 (the default cap, although the
// lease has a minute left), waits that second, and gets the replay: the
// handler runs once and both callers see its answer.
func TestTransportWaitsOutInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		started := make(chan struct{})
		var once atomic.Bool
		b := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			if once.CompareAndSwap(false, true) {
				close(started)
			}
			time.Sleep(300 * time.Millisecond)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "done")
		})
		c := &http.Client{Transport: &Transport{}} // defaults: 1 min budget
		send := func() (int, string, string) {
			req, _ := http.NewRequest("POST", b.srv.URL+"/orders", strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if err := SetKey(req.Header, "dup"); err != nil {
				t.Error(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return 0, "", ""
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body), resp.Header.Get(DefaultReplayHeader)
		}
		first := make(chan string, 1)
		go func() {
			status, body, _ := send()
			first <- fmt.Sprint(status, " ", body)
		}()
		<-started
		status, body, replayed := send()
		if status != 201 || body != "done" || replayed != "true" {
			t.Errorf("duplicate: %d %q replayed=%q; want 201 \"done\" replayed=true", status, body, replayed)
		}
		if got := <-first; got != "201 done" {
			t.Errorf("first: %q", got)
		}
		if n := b.calls.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})
}
