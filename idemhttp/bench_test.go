package idemhttp

import (
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemledger/idemledger/internal/cputime"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// The benchmarks compare, on one SQLite file, a realistic handler (it
// inserts an order and answers 201 with JSON) bare, behind Middleware
// (lease mode: claim, handler, complete) and as a TxHandler (one
// transaction), for a first request (a fresh key each time) and a replay
// (one key). Each runs in process (ServeHTTP) and over loopback HTTP, and
// with synchronous FULL (the default: a sync at every commit) and NORMAL.
// The ledger is built with Config.DB, as users are told to, and every
// benchmark reports the process's CPU time per request (cpu-ns/op: handler,
// server, client and SQLite alike, which all run in this process).
//
//	go test -run '^$' -bench . -benchtime 2s ./idemhttp/

var benchKeys atomic.Int64

const benchBody = `{"amount":1250,"currency":"EUR","customer":"cus_42"}`

type benchEnv struct {
	db  *sql.DB
	l   *ledger.Ledger[*sql.Tx]
	ins *sql.Stmt
}

func newBenchEnv(b *testing.B, sync sqlite.Synchronous) *benchEnv {
	db, _ := testdb.SQLiteFile(b, sqlite.Options{Synchronous: sync})
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return &benchEnv{db: db, l: l}
}

// handler inserts the order with db (autocommit) and answers it.
func (e *benchEnv) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		res, err := e.db.ExecContext(r.Context(), `INSERT INTO orders (body) VALUES (?)`, string(in))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		writeOrder(w, res)
	})
}

func (e *benchEnv) txHandler() http.Handler {
	return TxHandler(e.l, benchOptions(), func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
		in, _ := io.ReadAll(r.Body)
		res, err := tx.ExecContext(r.Context(), `INSERT INTO orders (body) VALUES (?)`, string(in))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		writeOrder(w, res)
	})
}

// bareTx is the bare form of the TxHandler: the same insert in a
// transaction of its own.
func (e *benchEnv) bareTx() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		tx, err := e.db.BeginTx(r.Context(), nil)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(r.Context(), `INSERT INTO orders (body) VALUES (?)`, string(in))
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		writeOrder(w, res)
	})
}

func writeOrder(w http.ResponseWriter, res sql.Result) {
	id, _ := res.LastInsertId()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(id, 10))
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`,"status":"created"}`)
}

func benchOptions() Options {
	return Options{Scope: func(*http.Request) (string, error) { return "tenant-1", nil }}
}

// sender sends one request to h, in process or over loopback HTTP.
type sender func(b *testing.B, key string)

func inProcess(h http.Handler) sender {
	return func(b *testing.B, key string) {
		req := httptest.NewRequest("POST", "/orders", strings.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(HeaderName, key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

func overHTTP(b *testing.B, h http.Handler) sender {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	c := srv.Client()
	return func(b *testing.B, key string) {
		req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(HeaderName, key)
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkMiddleware(b *testing.B) {
	for _, sync := range []sqlite.Synchronous{sqlite.SynchronousFull, sqlite.SynchronousNormal} {
		for _, via := range []string{"inproc", "http"} {
			prefix := "sync=" + sync.String() + "/" + via + "/"
			cases := []struct {
				name   string
				make   func(e *benchEnv) http.Handler
				keyed  bool
				replay bool
			}{
				{"bare", func(e *benchEnv) http.Handler { return e.handler() }, false, false},
				{"first", func(e *benchEnv) http.Handler { return Middleware(e.l, benchOptions())(e.handler()) }, true, false},
				{"replay", func(e *benchEnv) http.Handler { return Middleware(e.l, benchOptions())(e.handler()) }, true, true},
				{"bare-tx", func(e *benchEnv) http.Handler { return e.bareTx() }, false, false},
				{"tx-first", func(e *benchEnv) http.Handler { return e.txHandler() }, true, false},
				{"tx-replay", func(e *benchEnv) http.Handler { return e.txHandler() }, true, true},
			}
			for _, c := range cases {
				b.Run(prefix+c.name, func(b *testing.B) {
					e := newBenchEnv(b, sync)
					h := c.make(e)
					var send sender
					if via == "http" {
						send = overHTTP(b, h)
					} else {
						send = inProcess(h)
					}
					if c.replay {
						send(b, "replayed-key") // the first run, stored
					}
					b.ReportAllocs()
					b.ResetTimer()
					start := cputime.Process()
					for i := 0; b.Loop(); i++ {
						key := ""
						switch {
						case c.replay:
							key = "replayed-key"
						case c.keyed:
							key = "k-" + strconv.FormatInt(benchKeys.Add(1), 10)
						}
						send(b, key)
					}
					b.ReportMetric(float64((cputime.Process()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
