package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

const (
	hammerKeys       = 200
	hammerDuplicates = 4
	hammerWorkers    = 32
)

// hammer submits every key hammerDuplicates times from workers goroutines
// on db, each submission in its own transaction, and returns the value
// each submission got back, indexed [key][duplicate]. The submissions are
// queued key by key so that the duplicates of one key run at the same time
// in different goroutines.
func hammer[TTx any](ctx context.Context, d *testdb.DB[TTx], l *ledger.Ledger[TTx], workers int) ([hammerKeys][hammerDuplicates]int64, []error) {
	type job struct{ key, dup int }
	jobs := make(chan job)
	go func() {
		for k := range hammerKeys {
			for d := range hammerDuplicates {
				jobs <- job{k, d}
			}
		}
		close(jobs)
	}()
	var (
		got  [hammerKeys][hammerDuplicates]int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				id, err := submit(ctx, d, l, j.key)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("key %d: %w", j.key, err))
					mu.Unlock()
					continue
				}
				got[j.key][j.dup] = id
			}
		})
	}
	wg.Wait()
	return got, errs
}

// submit is one request as an application would write it: a transaction,
// a Mutate that inserts an order, a commit.
func submit[TTx any](ctx context.Context, d *testdb.DB[TTx], l *ledger.Ledger[TTx], key int) (int64, error) {
	tx, err := d.Driver.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Driver.Rollback(ctx, tx)
	r := ledger.Request{Key: fmt.Sprintf("order-%03d", key), Fingerprint: fp(fmt.Sprint("payload ", key))}
	res, err := ledger.Mutate(ctx, l, tx, r, func(ctx context.Context) (int64, error) {
		return d.QueryInt(ctx, tx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", r.Key)
	})
	if err != nil {
		return 0, err
	}
	return res.Value, d.Driver.Commit(ctx, tx)
}

// checkExactlyOnce checks the invariant: one order per key, and every
// submission of a key got that order's id back.
func checkExactlyOnce(t *testing.T, db *sql.DB, results ...[hammerKeys][hammerDuplicates]int64) {
	t.Helper()
	ids := map[string]int64{}
	rows, err := db.Query("SELECT item, id FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var item string
		var id int64
		if err := rows.Scan(&item, &id); err != nil {
			t.Fatal(err)
		}
		if _, dup := ids[item]; dup {
			t.Errorf("%s inserted twice", item)
		}
		ids[item] = id
		n++
	}
	rows.Close()
	if n != hammerKeys {
		t.Errorf("%d orders, want %d", n, hammerKeys)
	}
	for _, got := range results {
		for k := range hammerKeys {
			want := ids[fmt.Sprintf("order-%03d", k)]
			for d := range hammerDuplicates {
				if got[k][d] != want {
					t.Errorf("key %d duplicate %d got order %d, want %d", k, d, got[k][d], want)
				}
			}
		}
	}
}

// TestExactlyOnceUnderContention: 32 goroutines, 200 keys, 4 duplicates of
// each, in one process and one pool. The ledger uses the real clock: the
// process's on SQLite, the server's on PostgreSQL.
func TestExactlyOnceUnderContention(t *testing.T) {
	eachDriverInTurn(t, testExactlyOnceUnderContention[*sql.Tx], testExactlyOnceUnderContention[pgx.Tx])
}

func testExactlyOnceUnderContention[TTx any](t *testing.T, b *bundle[TTx]) {
	l, err := ledger.New(b.d.Driver, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, errs := hammer(context.Background(), b.d, l, hammerWorkers)
	for _, err := range errs {
		t.Error(err)
	}
	checkExactlyOnce(t, b.db, got)
}

const (
	workerEnv       = "IDEMLEDGER_TEST_WORKER_DB" // SQLite file or PostgreSQL DSN
	workerEngineEnv = "IDEMLEDGER_TEST_WORKER_ENGINE"
	processes       = 4
	perProcess      = hammerWorkers / processes
	workerStart     = "IDEMLEDGER_TEST_WORKER_START"
)

// TestExactlyOnceAcrossProcesses: 4 OS processes (this test binary run
// again, see TestWorkerProcess) hammer one database at once, each
// submitting all 200 keys 4 times: one SQLite file, or one PostgreSQL
// schema, as replicas of a service would.
func TestExactlyOnceAcrossProcesses(t *testing.T) {
	if os.Getenv(workerEnv) != "" {
		t.Skip("inside a worker process")
	}
	testdb.Long(t)
	for _, name := range testdb.Drivers() {
		t.Run(name, func(t *testing.T) { acrossProcesses(t, name) })
	}
}

func acrossProcesses(t *testing.T, name string) {
	// The pgxv5 workers reach the schema of a database/sql one.
	sqlName := testdb.SQLSibling(name)
	d, ok := testdb.OpenSQL(t, sqlName)
	if !ok {
		t.Fatalf("no database/sql driver %s", sqlName)
	}
	db, path := d.SQL, d.Source // path is what the workers open
	if _, err := db.Exec(ordersTable(d)); err != nil {
		t.Fatal(err)
	}
	// All workers start at the same wall-clock instant, after their
	// (slow under -race) start-up.
	start := time.Now().Add(2 * time.Second).UnixMilli()
	var cmds []*exec.Cmd
	for range processes {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), workerEnv+"="+path, workerEngineEnv+"="+name, fmt.Sprint(workerStart, "=", start))
		cmd.Stderr = os.Stderr
		out := new(jsonBuffer)
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var results [][hammerKeys][hammerDuplicates]int64
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			out := cmd.Stdout.(*jsonBuffer)
			out.mu.Lock()
			t.Fatalf("worker: %v\n%s", err, out.buf.String())
		}
		var got [hammerKeys][hammerDuplicates]int64
		if err := json.Unmarshal(cmd.Stdout.(*jsonBuffer).result(), &got); err != nil {
			t.Fatalf("worker output: %v", err)
		}
		results = append(results, got)
	}
	checkExactlyOnce(t, db, results...)
}

// TestWorkerProcess is the body of a worker process of
// TestExactlyOnceAcrossProcesses; it does nothing in a normal run. It
// prints its results as one JSON line prefixed with "RESULT ".
func TestWorkerProcess(t *testing.T) {
	path := os.Getenv(workerEnv)
	if path == "" {
		t.Skip("only run as a worker of TestExactlyOnceAcrossProcesses")
	}
	name := os.Getenv(workerEngineEnv)
	// A pool per process, as each replica of a service has; the server's
	// row locks queue the duplicates. An engine may want fewer
	// connections per process (testdb.Engine.ProcessConns). The lock wait
	// is raised from its default (SQLite's busy_timeout, 10 s): when the
	// PostgreSQL tests of other packages run at the same time on a 2-core
	// machine, their fsyncs and CPU can hold one writer back past 10 s
	// under -race. This test is about exactly-once, not latency.
	conns := testdb.Conns{Max: perProcess, LockWait: time.Minute}
	if n := testdb.EngineOf(name).ProcessConns; n > 0 {
		conns.Max = n
	}
	var got [hammerKeys][hammerDuplicates]int64
	err := testdb.Connect(name, path, conns,
		func(d *testdb.DB[*sql.Tx]) { got = workerRun(t, d) },
		func(d *testdb.DB[pgx.Tx]) { got = workerRun(t, d) })
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(got)
	fmt.Printf("\nRESULT %s\n", out)
}

// workerRun is a worker process's hammer, started at the instant the test
// set.
func workerRun[TTx any](t *testing.T, d *testdb.DB[TTx]) [hammerKeys][hammerDuplicates]int64 {
	l, err := ledger.New(d.Driver, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var start int64
	fmt.Sscan(os.Getenv(workerStart), &start)
	time.Sleep(time.Until(time.UnixMilli(start)))
	got, errs := hammer(context.Background(), d, l, perProcess)
	for _, err := range errs {
		t.Error(err)
	}
	return got
}
