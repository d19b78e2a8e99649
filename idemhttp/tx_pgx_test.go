package idemhttp

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// TestTxHandlerPgx: TxHandler with a handler written against pgx.Tx, on the
// native pgxv5 driver: the order and the record commit together, a retry
// replays, a failure status or a panic rolls the order back with the
// claim, and a retry then runs the handler again. (The other TxHandler
// tests use *sql.Tx handlers, on the database/sql drivers.)
func TestTxHandlerPgx(t *testing.T) {
	d := testdb.PgxDB(t)
	if _, err := d.SQL.Exec(ordersTable(testdb.Postgres)); err != nil {
		t.Fatal(err)
	}
	l := newLedger(t, d.Driver, ledger.Options{})
	b := &bundle{db: d.SQL, l: l, e: testdb.PgxV5}
	h := TxHandler(l, Options{Scope: func(*http.Request) (string, error) { return testScope, nil }},
		func(w http.ResponseWriter, r *http.Request, tx pgx.Tx) {
			b.calls.Add(1)
			in, _ := io.ReadAll(r.Body)
			var id int64
			if err := tx.QueryRow(r.Context(), `INSERT INTO orders (amount) VALUES ($1) RETURNING id`, string(in)).Scan(&id); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			switch r.URL.Query().Get("fail") {
			case "panic":
				panic("after the insert")
			case "503":
				http.Error(w, "upstream down", http.StatusServiceUnavailable)
				return
			case "ignored":
				// A failed statement whose error the handler ignores:
				// PostgreSQL aborts the transaction, and the answer cannot
				// be stored.
				tx.Exec(r.Context(), `SELECT 1/0`)
			}
			w.Header().Set("Location", "/orders/"+strconv.FormatInt(id, 10))
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`}`)
		})
	b.srv = httptest.NewUnstartedServer(h)
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Start()
	t.Cleanup(b.srv.Close)

	steps := []struct {
		name           string
		target, key    string
		status         int
		body, replayed string
		orders, runs   int
	}{
		{"first", "/orders", "k1", 201, `{"id":1}`, "", 1, 1},
		{"retry replays", "/orders", "k1", 201, `{"id":1}`, "true", 1, 1},
		{"503 rolls back", "/orders?fail=503", "k2", 503, "upstream down\n", "", 1, 2},
		{"its retry runs again", "/orders?fail=503", "k2", 503, "upstream down\n", "", 1, 3},
		{"panic rolls back", "/orders?fail=panic", "k3", 0, "", "", 1, 4},
		{"after the panic, a retry runs", "/orders", "k3", 201, `{"id":5}`, "", 2, 5},
		{"an ignored failed statement: 503, rolled back", "/orders?fail=ignored", "k4", 503, txFailed, "", 2, 6},
		{"its retry runs again", "/orders?fail=ignored", "k4", 503, txFailed, "", 2, 7},
	}
	for _, s := range steps {
		if s.status == 0 {
			// The panic goes on past TxHandler (after the rollback), so
			// net/http drops the connection: the client sees no answer.
			req, _ := http.NewRequest("POST", b.srv.URL+s.target, strings.NewReader("100"))
			req.Header.Set(HeaderName, s.key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("%s: answered %d, want a dropped connection", s.name, resp.StatusCode)
			}
		} else if a := b.do(t, "POST", s.target, "100", s.key); a.status != s.status || a.body != s.body || a.header.Get(DefaultReplayHeader) != s.replayed {
			t.Fatalf("%s: %d %q replayed %q; want %d %q %q", s.name, a.status, a.body, a.header.Get(DefaultReplayHeader), s.status, s.body, s.replayed)
		}
		if n := b.orders(t); n != s.orders || int(b.calls.Load()) != s.runs {
			t.Fatalf("%s: %d orders, %d runs; want %d, %d", s.name, n, b.calls.Load(), s.orders, s.runs)
		}
	}
}

// txFailed is TxHandler's answer when the transaction failed after the
// handler ran.
const txFailed = `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the request's transaction failed after the handler ran (a statement of the handler's, its own commit or rollback, or the store): it was rolled back and nothing was kept; retry later","code":"unavailable"}` + "\n"
