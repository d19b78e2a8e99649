package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
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
//   - replay: Mutate of a completed key, answered from the record.
//
// Ratios in BENCHMARKS.md are taken against plain and read of the same run.
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
		for _, name := range []string{"plain", "floor", "mutate", "read", "replay"} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) { parallel(b, clients, ops[name]) })
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
