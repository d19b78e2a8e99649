package idemhttp

import (
	"context"
	"database/sql"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// txSetup serves fn through TxHandler over a fresh database that also holds
// an orders table, the handler's business data.
func txSetup(t *testing.T, e string, opts Options, fn TxFunc[*sql.Tx]) *bundle {
	t.Helper()
	b := &bundle{db: openSQL(t, e), obs: &recorder{}}
	if _, err := b.db.Exec(ordersTable(e)); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(sqlDriver(e, b.db), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.l = l
	if opts.Scope == nil {
		opts.Scope = func(*http.Request) (string, error) { return testScope, nil }
	}
	counted := func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
		b.calls.Add(1)
		fn(w, r.WithContext(context.WithValue(r.Context(), engineKey{}, e)), tx)
	}
	b.srv = httptest.NewUnstartedServer(TxHandler(l, opts, counted))
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

// ordersTable is the handlers' business table on driver e's engine.
func ordersTable(e string) string {
	return "CREATE TABLE orders (" + testdb.EngineOf(e).Serial + ", amount BIGINT NOT NULL)"
}

func (b *bundle) orders(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM orders`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// engineKey is the context key of the driver's name, for createOrder.
type engineKey struct{}

// createOrder inserts an order with the amount in the body and answers
// 201, or the status named by the query's "status" after inserting.
func createOrder(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
	in, _ := io.ReadAll(r.Body)
	// txSetup names the driver in the context.
	e, _ := r.Context().Value(engineKey{}).(string)
	var id int64
	err := tx.QueryRowContext(r.Context(), testdb.Rebind(e, `INSERT INTO orders (amount) VALUES (?) RETURNING id`), string(in)).Scan(&id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(id, 10))
	w.Header().Set("Set-Cookie", "s=1")
	status := http.StatusCreated
	if s := r.URL.Query().Get("status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	w.WriteHeader(status)
	io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`}`)
}

func TestTxHandlerOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{}, createOrder)
		first := b.do(t, "POST", "/orders", "100", "k")
		if first.status != 201 || first.body != `{"id":1}` || first.header.Get("Location") != "/orders/1" || first.header.Get("Set-Cookie") != "s=1" {
			t.Fatalf("first: %+v", first)
		}
		again := b.do(t, "POST", "/orders", "100", `"k"`)
		if again.status != 201 || again.body != `{"id":1}` || again.header.Get("Location") != "/orders/1" ||
			again.header.Get(DefaultReplayHeader) != "true" || again.header.Get("Set-Cookie") != "" {
			t.Fatalf("replay: %+v", again)
		}
		if n := b.orders(t); n != 1 || b.calls.Load() != 1 {
			t.Fatalf("%d orders, %d runs; want 1 and 1", n, b.calls.Load())
		}
		if a := b.do(t, "POST", "/orders", "200", "k"); a.status != 422 {
			t.Fatalf("reused key: %+v", a)
		}
	})
}

func TestTxHandlerRollsBack(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{}, createOrder)
		a := b.do(t, "POST", "/orders?status=500", "100", "k")
		if a.status != 500 || a.body != `{"id":1}` || a.header.Get("Set-Cookie") != "s=1" {
			t.Fatalf("500 answer: %+v", a)
		}
		if n := b.orders(t); n != 0 {
			t.Fatalf("%d orders after a 500, want 0 (rolled back)", n)
		}
		if rec := b.record(t, "k"); rec != nil {
			t.Fatalf("a rolled back run left a record: %+v", rec)
		}
		if a := b.do(t, "POST", "/orders?status=500", "100", "k"); a.status != 500 || b.calls.Load() != 2 {
			t.Fatalf("retry: %+v, %d runs", a, b.calls.Load())
		}
	})
}

func TestTxHandlerPanic(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		var fail atomic.Bool
		fail.Store(true)
		b := txSetup(t, e, Options{}, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
			if _, err := tx.Exec(`INSERT INTO orders (amount) VALUES (1)`); err != nil {
				panic(err)
			}
			if fail.Load() {
				panic("boom")
			}
			w.WriteHeader(201)
		})
		req, _ := http.NewRequest("POST", b.srv.URL, nil)
		req.Header.Set(HeaderName, "k")
		if resp, err := b.srv.Client().Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("panicking handler answered %d", resp.StatusCode)
		}
		// The panic reaches net/http only after the deferred rollback.
		if n := b.orders(t); n != 0 {
			t.Fatalf("%d orders after a panic, want 0", n)
		}
		fail.Store(false)
		if a := b.do(t, "POST", "/", "", "k"); a.status != 201 || b.orders(t) != 1 {
			t.Fatalf("retry after panic: %+v, %d orders", a, b.orders(t))
		}
	})
}

func TestTxHandlerResponseTooLarge(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{MaxBodyBytes: 8}, createOrder)
		a := b.do(t, "POST", "/orders", "1", "k") // {"id":1} is 8 bytes
		if a.status != 201 {
			t.Fatalf("8-byte answer: %+v", a)
		}
		b2 := txSetup(t, e, Options{MaxBodyBytes: 7}, createOrder)
		a = b2.do(t, "POST", "/orders", "1", "k")
		want := `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"the response is longer than 7 bytes (MaxBodyBytes), the most TxHandler holds back until its commit; the transaction was rolled back","code":"response-too-large"}` + "\n"
		if a.status != 500 || a.body != want || a.header.Get("Set-Cookie") != "" {
			t.Fatalf("over-long answer: %d %q %q", a.status, a.body, a.header)
		}
		if n := b2.orders(t); n != 0 {
			t.Fatalf("%d orders, want 0", n)
		}
	})
}

func TestTxHandlerUnprotected(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{}, createOrder)
		for range 2 {
			if a := b.do(t, "POST", "/orders", "5"); a.status != 201 {
				t.Fatalf("unkeyed: %+v", a)
			}
		}
		if a := b.do(t, "POST", "/orders?status=503", "5"); a.status != 503 {
			t.Fatalf("unkeyed 503: %+v", a)
		}
		if n := b.orders(t); n != 2 {
			t.Fatalf("%d orders, want 2 (the 503 rolled back)", n)
		}
	})
}

func TestTxHandlerConcurrent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{}, createOrder)
		const n = 20
		var wg sync.WaitGroup
		answers := make([]answer, n)
		for i := range n {
			wg.Go(func() { answers[i] = b.do(t, "POST", "/orders", "7", "same") })
		}
		wg.Wait()
		firsts := 0
		for _, a := range answers {
			if a.status != 201 || a.body != `{"id":1}` {
				t.Fatalf("answer %+v", a)
			}
			if a.header.Get(DefaultReplayHeader) == "" {
				firsts++
			}
		}
		if firsts != 1 || b.calls.Load() != 1 || b.orders(t) != 1 {
			t.Fatalf("%d first answers, %d runs, %d orders; want 1 each", firsts, b.calls.Load(), b.orders(t))
		}
	})
}

// TestTxHandlerHandlerEndsTx: a handler that ends its transaction itself
// (here a rollback; on PostgreSQL a failed statement whose error it
// ignored does the same) leaves nothing to store its answer in: 503 with a
// detail that does not blame the store, nothing kept, and a retry runs the
// handler again.
func TestTxHandlerHandlerEndsTx(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{}, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
			createOrder(w, r, tx)
			tx.Rollback()
		})
		for i := range 2 {
			a := b.do(t, "POST", "/orders", "100", "k")
			if a.status != 503 || a.body != txFailed {
				t.Fatalf("run %d: %d %s; want 503 %s", i+1, a.status, a.body, txFailed)
			}
		}
		if n, rec := b.orders(t), b.record(t, "k"); n != 0 || rec != nil || b.calls.Load() != 2 {
			t.Fatalf("%d orders, record %+v, %d runs; want 0, none, 2", n, rec, b.calls.Load())
		}
	})
}

func TestTxHandlerStoreUnavailable(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := txSetup(t, e, Options{FailurePolicy: FailOpen}, createOrder)
		b.db.Close()
		a := b.do(t, "POST", "/orders", "1", "k")
		if a.status != 503 || !strings.Contains(a.body, `"code":"unavailable"`) || b.calls.Load() != 0 {
			t.Fatalf("store down: %+v, %d runs", a, b.calls.Load())
		}
	})
}

// TestTxHandlerReplaysFromTheCache: once the ledger has completed a record
// (and committed it), TxHandler answers its replays from the ledger's cache before
// beginning a transaction (ledger.Ledger.Recall; on SQLite, where BEGIN
// locks, ledger.Ledger.Lookup, which the cache answers too): the ledger's
// events say which call answered, and a replay still comes after the row
// is deleted by hand, which no transaction could have read.
func TestTxHandlerReplaysFromTheCache(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := &bundle{db: openSQL(t, e), obs: &recorder{}}
		if _, err := b.db.Exec(ordersTable(e)); err != nil {
			t.Fatal(err)
		}
		var lev recorder
		l, err := ledger.New(sqlDriver(e, b.db), ledger.Options{Observer: &lev})
		if err != nil {
			t.Fatal(err)
		}
		b.l = l
		insert := testdb.Rebind(e, `INSERT INTO orders (amount) VALUES (?) RETURNING id`)
		b.srv = httptest.NewServer(TxHandler(l, Options{Scope: func(*http.Request) (string, error) { return testScope, nil }},
			func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
				b.calls.Add(1)
				var id int64
				if err := tx.QueryRowContext(r.Context(), insert, 1).Scan(&id); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`}`)
			}))
		t.Cleanup(b.srv.Close)
		hit := "recall"
		if e == testdb.SQLite {
			hit = "lookup"
		}
		for i, want := range []struct {
			replayed bool
			events   []ledger.Event
		}{
			{false, nil},
			// Kept from the first request's own committed outcome.
			{true, []ledger.Event{{Kind: ledger.EventCacheHit, Op: hit}}},
			{true, []ledger.Event{{Kind: ledger.EventCacheHit, Op: hit}}},
			{true, []ledger.Event{{Kind: ledger.EventCacheHit, Op: hit}}}, // after the delete
		} {
			if i == 3 {
				if _, err := b.db.Exec(`DELETE FROM idempotency_ledger`); err != nil {
					t.Fatal(err)
				}
			}
			a := b.do(t, "POST", "/orders", `{"amount":1}`, "k")
			if a.status != 201 || a.body != `{"id":1}` || (a.header.Get(DefaultReplayHeader) == "true") != want.replayed || b.calls.Load() != 1 {
				t.Fatalf("request %d: %+v, %d runs", i, a, b.calls.Load())
			}
			var got []ledger.Event
			for _, ev := range lev.All() {
				got = append(got, ledger.Event{Kind: ev.Kind, Op: ev.Op})
			}
			lev.Reset()
			if len(got) != len(want.events) || (len(got) > 0 && got[0] != want.events[0]) {
				t.Fatalf("request %d: the ledger's events %+v, want %+v", i, got, want.events)
			}
		}
	})
}
