package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/cputime"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
)

// pgBenchDB is a fresh PostgreSQL schema with the orders table and a pool
// large enough for clients.
func pgBenchDB(b *testing.B, clients int) *sql.DB {
	b.Helper()
	db, _ := testdb.PostgresDSN(b)
	db.SetMaxOpenConns(clients)
	db.SetMaxIdleConns(clients)
	if _, err := db.Exec(`CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return db
}

// pgxBenchDB is pgBenchDB reached through a pgxpool.Pool of clients
// connections, pgx's defaults otherwise (QueryExecModeCacheStatement).
func pgxBenchDB(b *testing.B, clients int) *pgxpool.Pool {
	b.Helper()
	_, dsn := testdb.PostgresDSN(b)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return pool
}

// pgxInsertOrder is pgInsertOrder in a pgx.Tx.
func pgxInsertOrder(ctx context.Context, tx pgx.Tx, item string) (id int64, err error) {
	err = tx.QueryRow(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item).Scan(&id)
	return id, err
}

// pgInsertOrder is the business transaction's write on PostgreSQL.
func pgInsertOrder(ctx context.Context, tx *sql.Tx, item string) (id int64, err error) {
	err = tx.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item).Scan(&id)
	return id, err
}

// parallel runs op(i) for i in [0, b.N) on clients goroutines and reports
// the throughput as ops/s; ns/op is then wall time per operation, all
// clients together. It also reports the CPU time per operation of this
// process (cpu-ns/op: the clients, pgx and the runtime) and of the local
// PostgreSQL server's processes (server-cpu-ns/op; 0 if the server is not
// on this machine), which does most of the work.
func parallel(b *testing.B, clients int, op func(i int) error) {
	b.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, clients)
	)
	b.ResetTimer()
	start, startCPU, startServer := time.Now(), cputime.Process(), serverCPU()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, server := cputime.Process()-startCPU, serverCPU()-startServer
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(server.Nanoseconds())/float64(b.N), "server-cpu-ns/op")
}

// BenchmarkPostgresMutate compares, on PostgreSQL and with 1, 8 and 32
// concurrent clients, one business transaction (BEGIN, INSERT, COMMIT)
// without the ledger ("plain"), inside Mutate with a new key every time
// ("first"), and a retry that replays a completed key ("replay"; the
// clients replay different keys, as retries of different requests do):
// through database/sql (driver postgres) and, prefixed "pgx-", through a
// pgxpool.Pool (driver pgxv5). The ledger reads the server's clock, as in
// production.
func BenchmarkPostgresMutate(b *testing.B) {
	ctx := context.Background()
	for _, clients := range []int{1, 8, 32} {
		prefix := fmt.Sprintf("clients=%d/", clients)
		b.Run(prefix+"plain", func(b *testing.B) {
			db := pgBenchDB(b, clients)
			parallel(b, clients, func(i int) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if _, err := pgInsertOrder(ctx, tx, fmt.Sprint("order-", i)); err != nil {
					return err
				}
				return tx.Commit()
			})
		})
		mutate := func(db *sql.DB, l *Ledger[*sql.Tx], key string) (Result[int64], error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return Result[int64]{}, err
			}
			defer tx.Rollback()
			req := Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))}
			res, err := Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
				return pgInsertOrder(ctx, tx, key)
			})
			if err != nil {
				return res, err
			}
			return res, tx.Commit()
		}
		b.Run(prefix+"first", func(b *testing.B) {
			db := pgBenchDB(b, clients)
			l, _ := New(postgres.New(db), Options{})
			parallel(b, clients, func(i int) error {
				_, err := mutate(db, l, fmt.Sprint("order-", i))
				return err
			})
		})
		b.Run(prefix+"replay", func(b *testing.B) {
			const keys = 256
			db := pgBenchDB(b, clients)
			l, _ := New(postgres.New(db), Options{})
			for i := range keys {
				if _, err := mutate(db, l, fmt.Sprint("order-", i)); err != nil {
					b.Fatal(err)
				}
			}
			parallel(b, clients, func(i int) error {
				res, err := mutate(db, l, fmt.Sprint("order-", i%keys))
				if err == nil && !res.Replayed {
					err = fmt.Errorf("order-%d: not a replay", i%keys)
				}
				return err
			})
		})

		pgxMutate := func(pool *pgxpool.Pool, l *Ledger[pgx.Tx], key string) (Result[int64], error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return Result[int64]{}, err
			}
			defer tx.Rollback(ctx)
			req := Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))}
			res, err := Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
				return pgxInsertOrder(ctx, tx, key)
			})
			if err != nil {
				return res, err
			}
			return res, tx.Commit(ctx)
		}
		b.Run(prefix+"pgx-plain", func(b *testing.B) {
			pool := pgxBenchDB(b, clients)
			parallel(b, clients, func(i int) error {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(ctx)
				if _, err := pgxInsertOrder(ctx, tx, fmt.Sprint("order-", i)); err != nil {
					return err
				}
				return tx.Commit(ctx)
			})
		})
		// The floor of Mutate's shape on pgx: the plain transaction plus
		// the writes and round trips Mutate adds, without the ledger's
		// logic (one more INSERT sent with a SAVEPOINT, one UPDATE sent
		// with its RELEASE): five round trips.
		b.Run(prefix+"pgx-floor", func(b *testing.B) {
			pool := pgxBenchDB(b, clients)
			if _, err := pool.Exec(ctx, `CREATE TABLE floor (k text PRIMARY KEY, v bytea)`); err != nil {
				b.Fatal(err)
			}
			parallel(b, clients, func(i int) error {
				key := fmt.Sprint("order-", i)
				tx, err := pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(ctx)
				if err := pgxFloor(ctx, tx, key); err != nil {
					return err
				}
				return tx.Commit(ctx)
			})
		})
		b.Run(prefix+"pgx-first", func(b *testing.B) {
			pool := pgxBenchDB(b, clients)
			l, _ := New(pgxv5.New(pool), Options{})
			parallel(b, clients, func(i int) error {
				_, err := pgxMutate(pool, l, fmt.Sprint("order-", i))
				return err
			})
		})
		b.Run(prefix+"pgx-replay", func(b *testing.B) {
			const keys = 256
			pool := pgxBenchDB(b, clients)
			l, _ := New(pgxv5.New(pool), Options{})
			for i := range keys {
				if _, err := pgxMutate(pool, l, fmt.Sprint("order-", i)); err != nil {
					b.Fatal(err)
				}
			}
			parallel(b, clients, func(i int) error {
				res, err := pgxMutate(pool, l, fmt.Sprint("order-", i%keys))
				if err == nil && !res.Replayed {
					err = fmt.Errorf("order-%d: not a replay", i%keys)
				}
				return err
			})
		})
	}
}

// BenchmarkPostgresMutatePaired measures the ratios of
// BenchmarkPostgresMutate in a way that a machine shared with other jobs
// disturbs less: each client runs the transactions under comparison in
// turn (plain, first, and on pgx the floor; the order rotates), so that
// they meet the same load, and the benchmark reports each one's
// throughput relative to plain's as the ratio of the time spent in plain
// to the time spent in it ("first-x", "floor-x"; above 1 is faster than
// plain). ns/op is the wall time of one turn, all clients together.
func BenchmarkPostgresMutatePaired(b *testing.B) {
	ctx := context.Background()
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d/sql", clients), func(b *testing.B) {
			db := pgBenchDB(b, clients)
			l, _ := New(postgres.New(db), Options{})
			paired(b, clients, []string{"plain", "first"}, func(kind string, key string) error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if kind == "plain" {
					_, err = pgInsertOrder(ctx, tx, key)
				} else {
					req := Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))}
					_, err = Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
						return pgInsertOrder(ctx, tx, key)
					})
				}
				if err != nil {
					return err
				}
				return tx.Commit()
			})
		})
		b.Run(fmt.Sprintf("clients=%d/pgx", clients), func(b *testing.B) {
			pool := pgxBenchDB(b, clients)
			if _, err := pool.Exec(ctx, `CREATE TABLE floor (k text PRIMARY KEY, v bytea)`); err != nil {
				b.Fatal(err)
			}
			l, _ := New(pgxv5.New(pool), Options{})
			paired(b, clients, []string{"plain", "first", "floor"}, func(kind string, key string) error {
				tx, err := pool.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(ctx)
				switch kind {
				case "plain":
					_, err = pgxInsertOrder(ctx, tx, key)
				case "first":
					req := Request{Scope: "bench", Key: key, Fingerprint: hash.Bytes([]byte(key))}
					_, err = Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
						return pgxInsertOrder(ctx, tx, key)
					})
				case "floor":
					err = pgxFloor(ctx, tx, key)
				}
				if err != nil {
					return err
				}
				return tx.Commit(ctx)
			})
		})
	}
}

// pgxFloor is the floor's work inside tx (see pgx-floor).
func pgxFloor(ctx context.Context, tx pgx.Tx, key string) error {
	batch := &pgx.Batch{}
	batch.Queue("SAVEPOINT floor")
	batch.Queue("INSERT INTO floor (k) VALUES ($1)", key)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	if _, err := pgxInsertOrder(ctx, tx, key); err != nil {
		return err
	}
	batch = &pgx.Batch{}
	batch.Queue("UPDATE floor SET v = $2 WHERE k = $1", key, []byte(key))
	batch.Queue("RELEASE SAVEPOINT floor")
	return tx.SendBatch(ctx, batch).Close()
}

// paired runs b.N turns on clients goroutines; a turn runs op once for
// each kind, starting from a kind that rotates, with a key of its own. It
// reports, for every kind but the first, the first kind's total time over
// its own ("<kind>-x").
func paired(b *testing.B, clients int, kinds []string, op func(kind, key string) error) {
	b.Helper()
	var (
		next  atomic.Int64
		spent = make([]atomic.Int64, len(kinds))
		wg    sync.WaitGroup
		errs  = make(chan error, clients)
	)
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				for j := range kinds {
					k := (i + j) % len(kinds)
					start := time.Now()
					if err := op(kinds[k], fmt.Sprintf("%s-%d", kinds[k], i)); err != nil {
						errs <- err
						return
					}
					spent[k].Add(int64(time.Since(start)))
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	for k := 1; k < len(kinds); k++ {
		b.ReportMetric(float64(spent[0].Load())/float64(spent[k].Load()), kinds[k]+"-x")
	}
}
