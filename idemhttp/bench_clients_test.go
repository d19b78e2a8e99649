package idemhttp

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/cputime"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// BenchmarkClients measures the handlers of BenchmarkMiddleware over
// loopback HTTP (a real httptest server and a net/http client keeping up
// to 64 idle connections) with 1 and 16 concurrent clients, on every
// driver: SQLite under synchronous FULL and NORMAL, PostgreSQL through
// database/sql (postgres) and through pgx (pgxv5). Each driver's run has
// its own database and its bare handlers beside the ledger's, so the
// ratios to bare compare figures measured minutes apart at most:
//
//   - bare: the handler alone, one INSERT into orders in autocommit (one
//     commit), on the driver's own pool;
//   - first, replay: Middleware with a fresh key per request, and with
//     one stored key;
//   - read: the floor of a replay, the same work without the ledger: one
//     SELECT of a stored order by primary key on the pool, answered 201
//     (no fingerprint, no record to decode, no replayed headers);
//   - bare-tx: the same INSERT in a transaction of its own (BEGIN, INSERT,
//     COMMIT);
//   - tx-first, tx-replay: TxHandler.
//
// ns/op is wall clock per request across all clients (the inverse of the
// throughput); cpu-ns/op is this process's CPU time per request (client,
// server, pool and, for SQLite, the engine); on PostgreSQL, wal-B/op is
// the server's WAL written during the loop per request (pg_current_wal_lsn,
// the whole server's, so other sessions' writes count too).
//
//	IDEMLEDGER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go test -run '^$' -bench '^BenchmarkClients$' -benchtime 1s -cpu 2 ./idemhttp/
func BenchmarkClients(b *testing.B) {
	b.Run("driver=sqlite-full", func(b *testing.B) { runClients(b, sqliteClientsEnv(b, sqlite.SynchronousFull)) })
	b.Run("driver=sqlite-normal", func(b *testing.B) { runClients(b, sqliteClientsEnv(b, sqlite.SynchronousNormal)) })
	b.Run("driver=postgres", func(b *testing.B) { runClients(b, postgresClientsEnv(b)) })
	b.Run("driver=pgxv5", func(b *testing.B) { runClients(b, pgxClientsEnv(b)) })
}

// clientsEnv is one driver's database, with the orders table, and its
// ledger.
type clientsEnv[TTx any] struct {
	l *ledger.Ledger[TTx]
	// off is a ledger on the same database with its cache off
	// (ledger.CacheOff), for BenchmarkPostgresPaired's and
	// BenchmarkSQLitePaired's "-off" kinds.
	off *ledger.Ledger[TTx]
	// insert adds an order in autocommit; insertTx in tx. Both return
	// its id.
	insert   func(ctx context.Context, body string) (int64, error)
	insertTx func(ctx context.Context, tx TTx, body string) (int64, error)
	// read reads order 1's body.
	read     func(ctx context.Context) (string, error)
	begin    func(ctx context.Context) (TTx, error)
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx) error
	// wal reads the server's WAL position in bytes; nil on SQLite.
	wal func() int64
	// sqlDB and pool are the database/sql and pgx pools, for the paired
	// benchmarks' read (pool on PostgreSQL only).
	sqlDB *sql.DB
	pool  *pgxpool.Pool
}

const clientsOrdersPostgres = `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL)`

func newClientsLedger[TTx any](b *testing.B, d *testdb.DB[TTx]) *ledger.Ledger[TTx] {
	return newClientsLedgerWith(b, d, ledger.Options{})
}

func newClientsLedgerWith[TTx any](b *testing.B, d *testdb.DB[TTx], opts ledger.Options) *ledger.Ledger[TTx] {
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

func sqlTxFuncs(e *clientsEnv[*sql.Tx], db *sql.DB) {
	e.begin = func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) }
	e.commit = func(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
	e.rollback = func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }
}

func sqliteClientsEnv(b *testing.B, sync sqlite.Synchronous) *clientsEnv[*sql.Tx] {
	d := testdb.SQLiteDB(b, sqlite.Options{Synchronous: sync})
	db := d.SQL
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	e := &clientsEnv[*sql.Tx]{l: newClientsLedger(b, d), sqlDB: db}
	e.off = newClientsLedgerWith(b, d, ledger.Options{CacheBytes: ledger.CacheOff})
	e.insert = func(ctx context.Context, body string) (int64, error) {
		res, err := db.ExecContext(ctx, `INSERT INTO orders (body) VALUES (?)`, body)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	e.insertTx = func(ctx context.Context, tx *sql.Tx, body string) (int64, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO orders (body) VALUES (?)`, body)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	e.read = func(ctx context.Context) (body string, err error) {
		err = db.QueryRowContext(ctx, `SELECT body FROM orders WHERE id = 1`).Scan(&body)
		return body, err
	}
	sqlTxFuncs(e, db)
	return e
}

func walPosition(b *testing.B, db *sql.DB) func() int64 {
	return func() int64 {
		var n int64
		if err := db.QueryRow(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
}

func postgresClientsEnv(b *testing.B) *clientsEnv[*sql.Tx] {
	d := testdb.PostgresDB(b)
	db := d.SQL
	// database/sql keeps 2 idle connections by default: 16 clients would
	// open and close connections all the time, bare and ledger alike.
	db.SetMaxIdleConns(16)
	if _, err := db.Exec(clientsOrdersPostgres); err != nil {
		b.Fatal(err)
	}
	e := &clientsEnv[*sql.Tx]{l: newClientsLedger(b, d), wal: walPosition(b, db), sqlDB: db}
	e.off = newClientsLedgerWith(b, d, ledger.Options{CacheBytes: ledger.CacheOff})
	e.insert = func(ctx context.Context, body string) (id int64, err error) {
		err = db.QueryRowContext(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id)
		return id, err
	}
	e.insertTx = func(ctx context.Context, tx *sql.Tx, body string) (id int64, err error) {
		err = tx.QueryRowContext(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id)
		return id, err
	}
	e.read = func(ctx context.Context) (body string, err error) {
		err = db.QueryRowContext(ctx, `SELECT body FROM orders WHERE id = 1`).Scan(&body)
		return body, err
	}
	sqlTxFuncs(e, db)
	return e
}

func pgxClientsEnv(b *testing.B) *clientsEnv[pgx.Tx] {
	db, dsn := testdb.PostgresDSN(b)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 12 // as testdb's pools
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	d := testdb.WrapPgx(pool, db, dsn)
	if _, err := pool.Exec(context.Background(), clientsOrdersPostgres); err != nil {
		b.Fatal(err)
	}
	e := &clientsEnv[pgx.Tx]{l: newClientsLedger(b, d), wal: walPosition(b, db), pool: pool}
	e.off = newClientsLedgerWith(b, d, ledger.Options{CacheBytes: ledger.CacheOff})
	e.insert = func(ctx context.Context, body string) (id int64, err error) {
		err = pool.QueryRow(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id)
		return id, err
	}
	e.insertTx = func(ctx context.Context, tx pgx.Tx, body string) (id int64, err error) {
		err = tx.QueryRow(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id)
		return id, err
	}
	e.read = func(ctx context.Context) (body string, err error) {
		err = pool.QueryRow(ctx, `SELECT body FROM orders WHERE id = 1`).Scan(&body)
		return body, err
	}
	e.begin = pool.Begin
	e.commit = func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }
	e.rollback = func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) }
	return e
}

// answer writes the order as BenchmarkMiddleware's handlers do.
func answerOrder(w http.ResponseWriter, id int64, err error) {
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(id, 10))
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`,"status":"created"}`)
}

func (e *clientsEnv[TTx]) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		id, err := e.insert(r.Context(), string(in))
		answerOrder(w, id, err)
	})
}

// readOrder is the read floor: order 1, read and answered.
func (e *clientsEnv[TTx]) readOrder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		body, err := e.read(r.Context())
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/orders/1")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, body)
	})
}

func (e *clientsEnv[TTx]) bareTx() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		ctx := r.Context()
		tx, err := e.begin(ctx)
		if err != nil {
			answerOrder(w, 0, err)
			return
		}
		id, err := e.insertTx(ctx, tx, string(in))
		if err == nil {
			err = e.commit(ctx, tx)
		} else {
			e.rollback(ctx, tx)
		}
		answerOrder(w, id, err)
	})
}

func (e *clientsEnv[TTx]) txHandler() http.Handler { return e.txHandlerOn(e.l) }

// txHandlerOn is txHandler on the ledger l.
func (e *clientsEnv[TTx]) txHandlerOn(l *ledger.Ledger[TTx]) http.Handler {
	return TxHandler(l, benchOptions(), func(w http.ResponseWriter, r *http.Request, tx TTx) {
		in, _ := io.ReadAll(r.Body)
		id, err := e.insertTx(r.Context(), tx, string(in))
		answerOrder(w, id, err)
	})
}

func runClients[TTx any](b *testing.B, e *clientsEnv[TTx]) {
	if id, err := e.insert(context.Background(), benchBody); err != nil || id != 1 {
		b.Fatalf("order 1: id %d, %v", id, err)
	}
	cases := []struct {
		name   string
		make   func() http.Handler
		keyed  bool
		replay bool
	}{
		{"bare", e.handler, false, false},
		{"first", func() http.Handler { return Middleware(e.l, benchOptions())(e.handler()) }, true, false},
		{"replay", func() http.Handler { return Middleware(e.l, benchOptions())(e.handler()) }, true, true},
		{"read", e.readOrder, false, false},
		{"bare-tx", e.bareTx, false, false},
		{"tx-first", e.txHandler, true, false},
		{"tx-replay", e.txHandler, true, true},
	}
	for _, clients := range []int{1, 16} {
		for _, c := range cases {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, c.name), func(b *testing.B) {
				srv := httptest.NewServer(c.make())
				defer srv.Close()
				tr := srv.Client().Transport.(*http.Transport).Clone()
				tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 64, 64
				defer tr.CloseIdleConnections()
				client := &http.Client{Transport: tr}
				replayKey := fmt.Sprintf("replayed-%s-%d", c.name, benchKeys.Add(1))
				send := func(key string, wantReplay bool) error {
					req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader(benchBody))
					req.Header.Set("Content-Type", "application/json")
					if key != "" {
						req.Header.Set(HeaderName, key)
					}
					resp, err := client.Do(req)
					if err != nil {
						return err
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch {
					case resp.StatusCode != http.StatusCreated:
						return fmt.Errorf("status %d", resp.StatusCode)
					case wantReplay && resp.Header.Get(DefaultReplayHeader) != "true":
						return fmt.Errorf("not a replay")
					}
					return nil
				}
				if c.replay {
					if err := send(replayKey, false); err != nil { // the first run, stored
						b.Fatal(err)
					}
				}
				// Warm the pools and connections of every client.
				if err := drive(b, clients, 2*clients, func() error { return send(keyFor(c.keyed, c.replay, replayKey), c.replay) }); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var wal0 int64
				if e.wal != nil {
					wal0 = e.wal()
				}
				b.ResetTimer()
				start := cputime.Process()
				err := drive(b, clients, b.N, func() error { return send(keyFor(c.keyed, c.replay, replayKey), c.replay) })
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64((cputime.Process()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if e.wal != nil {
					b.ReportMetric(float64(e.wal()-wal0)/float64(b.N), "wal-B/op")
				}
			})
		}
	}
}

func keyFor(keyed, replay bool, replayKey string) string {
	switch {
	case replay:
		return replayKey
	case keyed:
		return "k-" + strconv.FormatInt(benchKeys.Add(1), 10)
	}
	return ""
}

// drive runs n requests from clients goroutines, each sending the next one
// as soon as its previous answer arrived, and returns the first error.
func drive(b *testing.B, clients, n int, send func() error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := send(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
