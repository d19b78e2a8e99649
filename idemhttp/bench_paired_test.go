package idemhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPostgresPaired measures issue 22's ratios on PostgreSQL, through
// database/sql (postgres) and pgx (pgxv5), over loopback HTTP, in a way that
// a machine shared with other jobs disturbs less than BenchmarkClients:
// every client sends one request of each kind in turn (the order rotates),
// so that all kinds meet the same load, and the ratios are of the time
// spent in each kind within the same run. The kinds:
//
//   - read: the floor of a replay. One plain SELECT of the very ledger row
//     that replay replays (status, headers, body, by primary key), on the
//     same pool, answered with the stored status and body (no fingerprint,
//     no record decoded, no replayed headers);
//   - replay: Middleware answering a stored key;
//   - first: Middleware with a fresh key, the handler inserting an order
//     in autocommit;
//   - bare-tx: the floor of a TxHandler: BEGIN, the same INSERT, COMMIT;
//   - tx-first, tx-replay: TxHandler with a fresh key and a stored one;
//   - tx-floor, tx-read: their floors (pairedFloors), the same statements
//     and round trips without the ledger's logic.
//
// Metrics: "<kind>-us" is the mean wall time of one request of the kind
// (one client's view); "replay/read" is read's time over replay's (the
// replay's throughput relative to the floor: 1 is at the floor, above 1
// faster), and likewise "tx-first/bare-tx", "tx-replay/replay",
// "tx-first/tx-floor", "tx-floor/bare-tx", "tx-replay/tx-read" and
// "tx-read/replay". ns/op is
// the wall time of one turn, all clients together.
//
//	IDEMLEDGER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go test -run '^$' -bench '^BenchmarkPostgresPaired$' -benchtime 2000x -count 6 ./idemhttp/
func BenchmarkPostgresPaired(b *testing.B) {
	b.Run("driver=postgres", func(b *testing.B) {
		e := postgresClientsEnv(b)
		db := e.sqlDB
		if _, err := db.Exec(pairedFloorTable); err != nil {
			b.Fatal(err)
		}
		runPaired(b, e, func(ctx context.Context, scope, key string) (int, []byte, error) {
			var status int
			var headers, body []byte
			err := db.QueryRowContext(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body)
			return status, body, err
		}, pairedFloors{
			floor: func(ctx context.Context, key, body string) (id int64, err error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return 0, err
				}
				defer tx.Rollback()
				for _, q := range []struct {
					sql  string
					args []any
				}{{"SAVEPOINT f", nil}, {"INSERT INTO floor (k) VALUES ($1)", []any{key}}} {
					if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
						return 0, err
					}
				}
				if err := tx.QueryRowContext(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id); err != nil {
					return 0, err
				}
				if _, err := tx.ExecContext(ctx, "UPDATE floor SET v = $2 WHERE k = $1", key, []byte(body)); err != nil {
					return 0, err
				}
				if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT f"); err != nil {
					return 0, err
				}
				return id, tx.Commit()
			},
			read: func(ctx context.Context, scope, key string) (status int, body []byte, err error) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return 0, nil, err
				}
				defer tx.Rollback()
				var headers []byte
				if err := tx.QueryRowContext(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body); err != nil {
					return 0, nil, err
				}
				return status, body, tx.Commit()
			},
		})
	})
	b.Run("driver=pgxv5", func(b *testing.B) {
		e := pgxClientsEnv(b)
		pool := e.pool
		if _, err := pool.Exec(context.Background(), pairedFloorTable); err != nil {
			b.Fatal(err)
		}
		runPaired(b, e, func(ctx context.Context, scope, key string) (int, []byte, error) {
			var status int
			var headers, body []byte
			err := pool.QueryRow(ctx, pairedReadSQL, scope, key).Scan(&status, &headers, &body)
			return status, body, err
		}, pairedFloors{
			floor: func(ctx context.Context, key, body string) (id int64, err error) {
				c, err := pool.Acquire(ctx)
				if err != nil {
					return 0, err
				}
				// An error leaves the connection in a transaction, and
				// pgxpool then drops it.
				defer c.Release()
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				batch.Queue("SAVEPOINT f")
				batch.Queue("INSERT INTO floor (k) VALUES ($1)", key)
				if err := c.SendBatch(ctx, batch).Close(); err != nil {
					return 0, err
				}
				if err := c.QueryRow(ctx, `INSERT INTO orders (body) VALUES ($1) RETURNING id`, body).Scan(&id); err != nil {
					return 0, err
				}
				batch = &pgx.Batch{}
				batch.Queue("UPDATE floor SET v = $2 WHERE k = $1", key, []byte(body))
				batch.Queue("RELEASE SAVEPOINT f")
				batch.Queue("COMMIT")
				return id, c.SendBatch(ctx, batch).Close()
			},
			read: func(ctx context.Context, scope, key string) (status int, body []byte, err error) {
				c, err := pool.Acquire(ctx)
				if err != nil {
					return 0, nil, err
				}
				defer c.Release()
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				var headers []byte
				batch.Queue(pairedReadSQL, scope, key).QueryRow(func(row pgx.Row) error {
					return row.Scan(&status, &headers, &body)
				})
				if err := c.SendBatch(ctx, batch).Close(); err != nil {
					return 0, nil, err
				}
				_, err = c.Exec(ctx, "COMMIT")
				return status, body, err
			},
		})
	})
}

// pairedReadSQL reads what a replay answers from, as an application would
// read a row of its own.
const pairedReadSQL = `SELECT status, headers, body FROM idempotency_ledger WHERE scope = $1 AND key = $2`

// pairedKinds are BenchmarkPostgresPaired's kinds, and pairedRatios the
// ratios it reports: the first kind's time over the second's.
var (
	pairedKinds  = []string{"read", "replay", "first", "bare-tx", "tx-first", "tx-replay", "tx-floor", "tx-read"}
	pairedRatios = [][2]string{{"read", "replay"}, {"bare-tx", "tx-first"}, {"replay", "tx-replay"},
		{"tx-floor", "tx-first"}, {"bare-tx", "tx-floor"}, {"tx-read", "tx-replay"}, {"replay", "tx-read"}}
)

// pairedFloors are a driver's floors of TxHandler: floor does what a first
// request's transaction does without the ledger's logic, in the same round
// trips as TxHandler on that driver (BEGIN, SAVEPOINT, an INSERT into a
// two-column table, the order's INSERT, an UPDATE of the row, RELEASE,
// COMMIT: batched into three round trips on pgx, seven on database/sql);
// read reads the replayed row in a transaction of its own (BEGIN with the
// SELECT on pgx, then COMMIT).
type pairedFloors struct {
	floor func(ctx context.Context, key, body string) (int64, error)
	read  func(ctx context.Context, scope, key string) (int, []byte, error)
}

const pairedFloorTable = `CREATE TABLE floor (k text PRIMARY KEY, v bytea)`

func runPaired[TTx any](b *testing.B, e *clientsEnv[TTx], read func(ctx context.Context, scope, key string) (int, []byte, error), fl pairedFloors) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			replayKey := fmt.Sprintf("paired-%d", benchKeys.Add(1))
			txReplayKey := replayKey + "-tx"
			handlers := map[string]http.Handler{
				"read": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					status, body, err := read(r.Context(), "tenant-1", replayKey)
					if err != nil {
						http.Error(w, err.Error(), 500)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					w.Write(body)
				}),
				"replay":    Middleware(e.l, benchOptions())(e.handler()),
				"first":     Middleware(e.l, benchOptions())(e.handler()),
				"bare-tx":   e.bareTx(),
				"tx-first":  e.txHandler(),
				"tx-replay": e.txHandler(),
				"tx-floor": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					in, _ := io.ReadAll(r.Body)
					id, err := fl.floor(r.Context(), fmt.Sprintf("floor-%d", benchKeys.Add(1)), string(in))
					answerOrder(w, id, err)
				}),
				"tx-read": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					status, body, err := fl.read(r.Context(), "tenant-1", txReplayKey)
					if err != nil {
						http.Error(w, err.Error(), 500)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					w.Write(body)
				}),
			}
			urls := make(map[string]string)
			for name, h := range handlers {
				srv := httptest.NewServer(h)
				b.Cleanup(srv.Close)
				urls[name] = srv.URL
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
			b.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: tr}
			send := func(kind string) error {
				key := ""
				switch kind {
				case "replay":
					key = replayKey
				case "tx-replay":
					key = txReplayKey
				case "first", "tx-first":
					key = fmt.Sprintf("paired-%d", benchKeys.Add(1))
				}
				req, _ := http.NewRequest("POST", urls[kind]+"/orders", strings.NewReader(benchBody))
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
				replayed := resp.Header.Get(DefaultReplayHeader) == "true"
				switch {
				case resp.StatusCode != http.StatusCreated:
					return fmt.Errorf("%s: status %d", kind, resp.StatusCode)
				case replayed != (kind == "replay" || kind == "tx-replay"):
					return fmt.Errorf("%s: replayed %v", kind, replayed)
				}
				return nil
			}
			// The stored answers; their first runs are not replays.
			for _, kind := range []string{"replay", "tx-replay"} {
				if err := sendAs(send, kind); err != nil {
					b.Fatal(err)
				}
			}
			// Warm every client's connections and the pools.
			if err := turns(clients, 2*clients, send, nil); err != nil {
				b.Fatal(err)
			}
			spent := make([]atomic.Int64, len(pairedKinds))
			b.ResetTimer()
			err := turns(clients, b.N, send, spent)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			index := make(map[string]int)
			for i, k := range pairedKinds {
				index[k] = i
				b.ReportMetric(float64(spent[i].Load())/float64(b.N)/1e3, k+"-us")
			}
			for _, r := range pairedRatios {
				b.ReportMetric(float64(spent[index[r[0]]].Load())/float64(spent[index[r[1]]].Load()), r[1]+"/"+r[0])
			}
		})
	}
}

// sendAs sends the first request of a replayed kind: the one that is
// stored, and so not a replay. The first kind's request stands in for it.
func sendAs(send func(string) error, kind string) error {
	err := send(kind)
	if err != nil && strings.HasSuffix(err.Error(), "replayed false") {
		return nil
	}
	return err
}

// turns runs n turns on clients goroutines; a turn sends one request of
// every kind of pairedKinds, from a kind that rotates. spent, when not
// nil, adds up each kind's wall time.
func turns(clients, n int, send func(string) error, spent []atomic.Int64) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				for j := range pairedKinds {
					k := (i + j) % len(pairedKinds)
					start := time.Now()
					if err := send(pairedKinds[k]); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
					if spent != nil {
						spent[k].Add(int64(time.Since(start)))
					}
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}
