package mysql_test

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
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

// BenchmarkMySQL compares, at 1 and 16 clients, on the server named by
// IDEMLEDGER_TEST_MYSQL:
//
//   - plain: a transaction that inserts one order (the baseline);
//   - floor: the same, plus one INSERT of a row shaped like the ledger's
//     (what any record of the request must cost at least);
//   - mutate: ledger.Mutate's first run of a new key, inserting the order;
//   - read: a plain SELECT of a completed record by its key (the baseline
//     of a replay);
//   - replay: Mutate of a completed key, answered from the record;
//   - bare, mw-first, mw-replay: an HTTP handler inserting an order (in
//     autocommit), bare and behind idemhttp.Middleware (lease mode), served
//     in process;
//   - bare-tx, tx-first, tx-replay: the same insert in a transaction of
//     its own, bare and as an idemhttp.TxHandler.
//
// Ratios in BENCHMARKS.md are taken against plain, read, bare and bare-tx
// of the same run.
func BenchmarkMySQL(b *testing.B) {
	for _, clients := range []int{1, 16} {
		d := testdb.MySQLDB(b)
		db := d.SQL
		db.SetMaxOpenConns(clients)
		db.SetMaxIdleConns(clients)
		for _, stmt := range []string{
			"CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)",
			"CREATE TABLE floor_records LIKE idempotency_ledger",
		} {
			if _, err := db.Exec(stmt); err != nil {
				b.Fatal(err)
			}
		}
		l, err := ledger.New(mysql.New(db), ledger.Options{TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		var seq atomic.Int64
		key := func() string { return fmt.Sprintf("k-%d", seq.Add(1)) }
		insertOrder := func(ctx context.Context, tx *sql.Tx, item string) (int64, error) {
			r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
			if err != nil {
				return 0, err
			}
			return r.LastInsertId()
		}
		inTx := func(f func(tx *sql.Tx) error) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := f(tx); err != nil {
				return err
			}
			return tx.Commit()
		}
		fp := hash.Bytes([]byte("payload"))
		// Completed records for read and replay.
		const done = 256
		for i := range done {
			k := fmt.Sprintf("done-%d", i)
			if err := inTx(func(tx *sql.Tx) error {
				_, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: k, Fingerprint: fp}, func(ctx context.Context) (int64, error) {
					return insertOrder(ctx, tx, k)
				})
				return err
			}); err != nil {
				b.Fatal(err)
			}
		}
		ops := map[string]func(i int) error{
			"plain": func(int) error {
				return inTx(func(tx *sql.Tx) error { _, err := insertOrder(ctx, tx, key()); return err })
			},
			"floor": func(int) error {
				return inTx(func(tx *sql.Tx) error {
					k := key()
					if _, err := insertOrder(ctx, tx, k); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, "INSERT INTO floor_records (scope, `key`, fingerprint, state, fence, status, body, kind, created_at, completed_at, expires_at) VALUES ('', ?, ?, 'completed', 1, 0, '{\"id\":1}', 'value', 1, 1, 2)", k, fp[:])
					return err
				})
			},
			"mutate": func(int) error {
				return inTx(func(tx *sql.Tx) error {
					k := key()
					_, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: k, Fingerprint: fp}, func(ctx context.Context) (int64, error) {
						return insertOrder(ctx, tx, k)
					})
					return err
				})
			},
			"read": func(i int) error {
				var body []byte
				return db.QueryRowContext(ctx, "SELECT body FROM idempotency_ledger WHERE scope = '' AND `key` = ?", fmt.Sprintf("done-%d", i%done)).Scan(&body)
			},
			"replay": func(i int) error {
				return inTx(func(tx *sql.Tx) error {
					res, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: fmt.Sprintf("done-%d", i%done), Fingerprint: fp}, func(ctx context.Context) (int64, error) {
						return 0, fmt.Errorf("ran")
					})
					if err == nil && !res.Replayed {
						err = fmt.Errorf("not replayed")
					}
					return err
				})
			},
		}
		for name, op := range httpOps(b, db, l) {
			ops[name] = op
		}
		// Names as key=value, so that benchstat -col /op sets each beside
		// its baseline (plain, read, bare, bare-tx).
		for _, name := range []string{"plain", "floor", "mutate", "read", "replay", "bare", "mw-first", "mw-replay", "bare-tx", "tx-first", "tx-replay"} {
			b.Run(fmt.Sprintf("clients=%d/op=%s", clients, name), func(b *testing.B) { parallel(b, clients, ops[name]) })
		}
		l.Close()
	}
}

// parallel runs op(i) for i in [0, b.N) on clients goroutines and reports
// ops/s.
func parallel(b *testing.B, clients int, op func(i int) error) {
	b.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		once sync.Once
		fail error
	)
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := op(int(i)); err != nil {
					once.Do(func() { fail = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if fail != nil {
		b.Fatal(fail)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// httpOps are the HTTP handlers of BenchmarkMySQL, each request sent in
// process (ServeHTTP), so that the figures hold the handler's and the
// ledger's work and none of a network client's.
func httpOps(b *testing.B, db *sql.DB, l *ledger.Ledger[*sql.Tx]) map[string]func(int) error {
	var seq atomic.Int64
	opts := idemhttp.Options{Scope: func(*http.Request) (string, error) { return "tenant-1", nil }}
	const body = `{"amount":1250,"currency":"EUR","customer":"cus_42"}`
	answer := func(w http.ResponseWriter, res sql.Result, err error) {
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		id, _ := res.LastInsertId()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":`+strconv.FormatInt(id, 10)+`}`)
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		res, err := db.ExecContext(r.Context(), "INSERT INTO orders (item) VALUES (?)", string(in[:32]))
		answer(w, res, err)
	})
	bareTx := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		tx, err := db.BeginTx(r.Context(), nil)
		if err != nil {
			answer(w, nil, err)
			return
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(r.Context(), "INSERT INTO orders (item) VALUES (?)", string(in[:32]))
		if err == nil {
			err = tx.Commit()
		}
		answer(w, res, err)
	})
	txh := idemhttp.TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
		in, _ := io.ReadAll(r.Body)
		res, err := tx.ExecContext(r.Context(), "INSERT INTO orders (item) VALUES (?)", string(in[:32]))
		answer(w, res, err)
	})
	mw := idemhttp.Middleware(l, opts)(bare)
	send := func(h http.Handler, key string) error {
		req := httptest.NewRequest("POST", "/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(idemhttp.HeaderName, key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
		}
		return nil
	}
	fresh := func() string { return "h-" + strconv.FormatInt(seq.Add(1), 10) }
	// Completed records for the replays.
	const done = 64
	for i := range done {
		for _, h := range []struct {
			h      http.Handler
			prefix string
		}{{mw, "mw-"}, {txh, "tx-"}} {
			if err := send(h.h, h.prefix+strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return map[string]func(int) error{
		"bare":      func(int) error { return send(bare, "") },
		"mw-first":  func(int) error { return send(mw, fresh()) },
		"mw-replay": func(i int) error { return send(mw, "mw-"+strconv.Itoa(i%done)) },
		"bare-tx":   func(int) error { return send(bareTx, "") },
		"tx-first":  func(int) error { return send(txh, fresh()) },
		"tx-replay": func(i int) error { return send(txh, "tx-"+strconv.Itoa(i%done)) },
	}
}
