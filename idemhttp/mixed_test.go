package idemhttp

import (
	"context"
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

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// mixedSetup serves POST /orders on one ledger and database through
// Middleware or TxHandler, whichever viaTx says at the time of the request,
// as a rolling deployment that moves a route from one form to the other
// would. Both handlers insert an order and answer 201 with its id.
func mixedSetup(t *testing.T, e string) (b *bundle, viaTx *atomic.Bool) {
	t.Helper()
	b = &bundle{db: openSQL(t, e), obs: &recorder{}}
	if _, err := b.db.Exec(ordersTable(e)); err != nil {
		t.Fatal(err)
	}
	var err error
	l, err := ledger.New(sqlDriver(e, b.db), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.l = l
	opts := Options{Scope: func(*http.Request) (string, error) { return testScope, nil },
		Observer: b.obs}
	answer := func(w http.ResponseWriter, id int64) {
		w.Header().Set("Location", fmt.Sprint("/orders/", id))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d}`, id)
	}
	insert := testdb.Rebind(e, `INSERT INTO orders (amount) VALUES (?) RETURNING id`)
	mw := Middleware(l, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.calls.Add(1)
		var id int64
		if err := b.db.QueryRowContext(r.Context(), insert, 1).Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		answer(w, id)
	}))
	tx := TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
		b.calls.Add(1)
		var id int64
		if err := tx.QueryRowContext(r.Context(), insert, 1).Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		answer(w, id)
	})
	viaTx = &atomic.Bool{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if viaTx.Load() {
			tx.ServeHTTP(w, r)
			return
		}
		mw.ServeHTTP(w, r)
	}))
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b, viaTx
}

// TestMiddlewareAndTxHandlerShareRecords: a key first served by one form
// is replayed by the other, both ways, with the stored status, header
// lines and body, and the handler runs once per key.
func TestMiddlewareAndTxHandlerShareRecords(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b, viaTx := mixedSetup(t, e)
		for _, first := range []string{"middleware", "txhandler"} {
			key := "moved-from-" + first
			viaTx.Store(first == "txhandler")
			a := b.do(t, "POST", "/orders", `{"amount":1}`, key)
			if a.status != 201 || a.header.Get(DefaultReplayHeader) != "" {
				t.Fatalf("%s, first request: %+v", first, a)
			}
			before := b.calls.Load()
			viaTx.Store(first != "txhandler")
			r := b.do(t, "POST", "/orders", `{"amount":1}`, key)
			if r.status != 201 || r.body != a.body || r.header.Get("Location") != a.header.Get("Location") ||
				r.header.Get(DefaultReplayHeader) != "true" || b.calls.Load() != before {
				t.Fatalf("first served by the %s, retried by the other: %+v, %d more runs; want the replay of %+v", first, r, b.calls.Load()-before, a)
			}
		}
		if n := b.orders(t); n != 2 {
			t.Errorf("%d orders, want 2 (one per key)", n)
		}
	})
}

// TestReplayOfMutateRecord: a record that ledger.Mutate wrote (JSON with
// status 0) under the fingerprint of an HTTP request is refused with 500
// by both forms, never replayed with status 0, which net/http would panic
// on.
func TestReplayOfMutateRecord(t *testing.T) {
	b, viaTx := mixedSetup(t, testdb.SQLite)
	req := ledger.Request{Scope: testScope, Key: "mutate-made",
		Fingerprint: hash.Request("POST", "/orders", "application/json", []byte(`{"amount":1}`))}
	tx, err := b.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Mutate(context.Background(), b.l.(*ledger.Ledger[*sql.Tx]), tx, req, func(context.Context) (int, error) { return 7, nil }); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, useTx := range []bool{false, true} {
		viaTx.Store(useTx)
		a := b.do(t, "POST", "/orders", `{"amount":1}`, "mutate-made")
		if a.status != 500 || !strings.Contains(a.body, `"code":"stored-outcome"`) || b.calls.Load() != 0 {
			t.Errorf("TxHandler %v: %+v, %d runs; want 500 stored-outcome and no run", useTx, a, b.calls.Load())
		}
	}
	// Answered from the record, with 500: replayed, by either form.
	b.obs.check(t, ev(ledger.EventReplayed, "", 500), ev(ledger.EventReplayed, "", 500))
}

// TestTxHandlerUnderMiddleware: a TxHandler route of a mux that a
// Middleware wraps works (it used to find the middleware's own claim and
// answer 409 for ever), and keeps exactly once: when the middleware's
// completion is lost and its lease runs out, the retry reaches the
// TxHandler, which replays its own record instead of inserting again.
func TestTxHandlerUnderMiddleware(t *testing.T) {
	eachEngine(t, func(t *testing.T, e string) {
		b := &bundle{db: openSQL(t, e), obs: &recorder{}}
		if _, err := b.db.Exec(ordersTable(e)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		clk := &faultClock{now: t0}
		var err error
		// The middleware's record is changed by hand below, which the
		// ledger's cache would not see.
		l, err := ledger.New(sqlDriver(e, b.db), ledger.Options{Lease: time.Minute, Now: clk.Now, CacheBytes: ledger.CacheOff})
		if err != nil {
			t.Fatal(err)
		}
		b.l = l
		opts := Options{Scope: func(*http.Request) (string, error) { return testScope, nil }}
		insert := testdb.Rebind(e, `INSERT INTO orders (amount) VALUES (?) RETURNING id`)
		mux := http.NewServeMux()
		mux.Handle("POST /orders", TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
			b.calls.Add(1)
			var id int64
			if err := tx.QueryRowContext(r.Context(), insert, 1).Scan(&id); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":%d}`, id)
		}))
		b.srv = httptest.NewServer(Middleware(l, opts)(mux))
		t.Cleanup(b.srv.Close)

		a := b.do(t, "POST", "/orders", `{"amount":1}`, "k")
		if a.status != 201 || a.body != `{"id":1}` || b.calls.Load() != 1 {
			t.Fatalf("first request: %+v, %d runs", a, b.calls.Load())
		}
		if r := b.do(t, "POST", "/orders", `{"amount":1}`, "k"); r.status != 201 || r.body != a.body || r.header.Get(DefaultReplayHeader) != "true" || b.calls.Load() != 1 {
			t.Fatalf("retry: %+v, %d runs; want the middleware's replay", r, b.calls.Load())
		}
		inner := b.record(t, nestedKey("k"))
		if inner == nil || inner.State != ledger.StateCompleted || string(inner.Outcome.Body) != a.body {
			t.Fatalf("the TxHandler's own record = %+v", inner)
		}

		// The middleware's completion is lost: its record is back in
		// flight, and its lease runs out.
		if _, err := b.db.Exec(testdb.Rebind(e, `UPDATE idempotency_ledger SET state = 'in_flight', lease_token = 'gone',
			lease_expires_at = ?, status = NULL, headers = NULL, body = NULL, completed_at = NULL WHERE "key" = ?`),
			t0.UnixMilli(), "k"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		r := b.do(t, "POST", "/orders", `{"amount":1}`, "k")
		if r.status != 201 || r.body != a.body || b.calls.Load() != 1 {
			t.Fatalf("retry after the lost completion: %+v, %d runs; want the TxHandler's replay", r, b.calls.Load())
		}
		if n := b.orders(t); n != 1 {
			t.Errorf("%d orders, want 1", n)
		}
		if rec := b.record(t, "k"); rec == nil || rec.State != ledger.StateCompleted || rec.Fence != 2 {
			t.Errorf("the middleware's record after the retry = %+v, want completed by a takeover (fence 2)", rec)
		}
	})
}
