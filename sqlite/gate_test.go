package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
)

func TestKind(t *testing.T) {
	tests := []struct {
		query string
		want  stmtKind
	}{
		{"SELECT 1", stmtRead},
		{"  select * from t", stmtRead},
		{"-- name: Get :one\nSELECT scope FROM idempotency_ledger", stmtRead},
		{"/* x */ -- y\n VALUES (1)", stmtRead},
		{"EXPLAIN QUERY PLAN DELETE FROM t", stmtRead},
		{"PRAGMA journal_mode", stmtRead},
		{"PRAGMA table_info(t)", stmtRead},
		{"PRAGMA user_version = 3", stmtWrite},
		{"PRAGMA incremental_vacuum(100)", stmtWrite},
		{"PRAGMA wal_checkpoint(TRUNCATE)", stmtCheckpoint},
		{"pragma main.wal_checkpoint", stmtCheckpoint},
		{"-- name: ClaimInsert :execrows\nINSERT INTO t VALUES (1)", stmtWrite},
		{"UPDATE t SET x = 1 RETURNING x", stmtWrite},
		{"WITH x AS (SELECT 1) DELETE FROM t", stmtWrite},
		{"CREATE TABLE t (x)", stmtWrite},
		{"SAVEPOINT a", stmtWrite},
		{"RELEASE SAVEPOINT a", stmtWrite},
		{"ROLLBACK TO SAVEPOINT a", stmtWrite},
		{"ROLLBACK  TO a", stmtWrite},
		{"BEGIN IMMEDIATE", stmtBegin},
		{"begin", stmtBegin},
		{"COMMIT", stmtEnd},
		{"END TRANSACTION", stmtEnd},
		{"ROLLBACK", stmtEnd},
		{"rollback transaction", stmtEnd},
		{"", stmtWrite},
		{"-- only a comment", stmtWrite},
	}
	for _, tt := range tests {
		if got := kind(tt.query); got != tt.want {
			t.Errorf("kind(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

// openGated opens path with SQLite's own busy_timeout at busy and the
// gate's wait at wait, as Open does with one timeout for both.
func openGated(t *testing.T, path string, busy, wait time.Duration, conns int) *sql.DB {
	t.Helper()
	o, err := Options{BusyTimeout: busy, MaxOpenConns: conns}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConnector(o.dsn(path), wait)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// writeMix runs n writes on db: transactions that read then write (the
// shape of ledger.Mutate), autocommit inserts through a prepared statement
// (the shape of a lease-mode claim), and UPDATE … RETURNING read through
// Query outside a transaction.
func writeMix(ctx context.Context, db *sql.DB, ins *sql.Stmt, who string, n int) error {
	for i := range n {
		key := fmt.Sprintf("%s-%d", who, i)
		switch i % 3 {
		case 0:
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return fmt.Errorf("begin: %w", err)
			}
			var c int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&c); err != nil {
				tx.Rollback()
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", key, c); err != nil {
				tx.Rollback()
				return fmt.Errorf("insert in tx: %w", err)
			}
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		case 1:
			if _, err := ins.ExecContext(ctx, key); err != nil {
				return fmt.Errorf("autocommit insert: %w", err)
			}
		case 2:
			if _, err := ins.ExecContext(ctx, key); err != nil {
				return fmt.Errorf("autocommit insert: %w", err)
			}
			var got int
			if err := db.QueryRowContext(ctx, "UPDATE t SET n = n + 1 WHERE k = ? RETURNING n", key).Scan(&got); err != nil || got != 1 {
				return fmt.Errorf("update returning = %d, %v", got, err)
			}
		}
	}
	return nil
}

// TestGateQueuesWritersOfThePool hammers one pool with writers while
// SQLite's own busy_timeout is 1 ms: had any two of the pool's connections
// met at SQLite's write lock, one would fail with SQLITE_BUSY within a
// millisecond. The gate queues them in Go instead, so none fails.
func TestGateQueuesWritersOfThePool(t *testing.T) {
	db := openGated(t, filepath.Join(t.TempDir(), "g.db"), time.Millisecond, time.Minute, 8)
	ctx := context.Background()
	ins, err := db.PrepareContext(ctx, "-- name: Ins :exec\nINSERT INTO t VALUES (?, 0)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	const workers, each = 24, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			if err := writeMix(ctx, db, ins, "w"+strconv.Itoa(w), each); err != nil {
				errs <- err
			}
		})
	}
	// Readers beside the writers never wait for the gate.
	for range 4 {
		wg.Go(func() {
			for range 50 {
				var c int
				if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&c); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != workers*each {
		t.Errorf("rows = %d, %v; want %d", n, err, workers*each)
	}
}

// TestGateWaitIsBounded: a writer that waits for the gate longer than the
// busy timeout (here: behind a transaction of the same pool that never
// ends) fails as SQLITE_BUSY would, busy and retryable; ctx's end ends the
// wait too. The slot comes back when the holder ends.
func TestGateWaitIsBounded(t *testing.T) {
	db := openGated(t, filepath.Join(t.TempDir(), "g.db"), time.Millisecond, 20*time.Millisecond, 3)
	ctx := context.Background()
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		write func(ctx context.Context) error
	}{
		{"begin", func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err == nil {
				tx.Rollback()
			}
			return err
		}},
		{"autocommit", func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "INSERT INTO t VALUES ('x', 0)")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write(ctx)
			var be *busyError
			if !errors.As(err, &be) || !errors.Is(interpretError(err), idriver.ErrBusy) || !errors.Is(interpretError(err), idriver.ErrRetryable) {
				t.Errorf("err = %v, want the gate's busy error, marked busy and retryable", err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := tt.write(cctx); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: err = %v, want context.Canceled", err)
			}
		})
	}
	// A read-only transaction and reads pass beside the holder.
	ro, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only begin: %v", err)
	}
	var n int
	if err := ro.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	ro.Commit()
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ('after', 0)"); err != nil {
		t.Errorf("after the holder ended: %v", err)
	}
}

// TestGateBeginAsText: a transaction begun and ended by executing BEGIN and
// COMMIT on a pinned connection (as the migrations do) holds the slot in
// between; one left open when its connection goes back to the pool is
// discarded with it, and the slot comes back.
func TestGateBeginAsText(t *testing.T) {
	db := openGated(t, filepath.Join(t.TempDir(), "g.db"), time.Millisecond, 50*time.Millisecond, 3)
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (?, 0)", strconv.FormatBool(commit)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ('other', 0)"); !errors.Is(interpretError(err), idriver.ErrBusy) {
			t.Errorf("write beside BEGIN as text: %v, want busy", err)
		}
		if commit {
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close()
		if _, err := db.ExecContext(ctx, "INSERT OR REPLACE INTO t VALUES ('other', 0)"); err != nil {
			t.Errorf("commit %v: write after the connection went back: %v", commit, err)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t WHERE k IN ('true', 'false')").Scan(&n); err != nil || n != 1 {
		t.Errorf("committed rows = %d, %v; want 1 (the uncommitted one rolled back)", n, err)
	}
}

const gateWorkerEnv = "IDEMLEDGER_TEST_GATE_DB"

// TestGateAcrossProcesses: another process writing the same file is not
// behind this process's gate; the two meet in SQLite and wait for each
// other through busy_timeout (Open's default), and both finish every write.
func TestGateAcrossProcesses(t *testing.T) {
	if os.Getenv(gateWorkerEnv) != "" {
		t.Skip("the worker process")
	}
	path := filepath.Join(t.TempDir(), "g.db")
	db := openGated(t, path, DefaultBusyTimeout, DefaultBusyTimeout, DefaultMaxOpenConns)
	const procs, workers, each = 2, 8, 30
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGateWorkerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), gateWorkerEnv+"="+path, "IDEMLEDGER_TEST_GATE_WHO=p"+strconv.Itoa(p))
		out := new(lockedBuffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("worker %d:\n%s", p, out.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	ctx := context.Background()
	ins, err := db.PrepareContext(ctx, "INSERT INTO t VALUES (?, 0)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if err := writeMix(ctx, db, ins, "main"+strconv.Itoa(w), each); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != (procs+1)*workers*each {
		t.Errorf("rows = %d, %v; want %d", n, err, (procs+1)*workers*each)
	}
}

// TestGateWorkerProcess is the other process of TestGateAcrossProcesses.
func TestGateWorkerProcess(t *testing.T) {
	path := os.Getenv(gateWorkerEnv)
	if path == "" {
		t.Skip("run by TestGateAcrossProcesses")
	}
	who := os.Getenv("IDEMLEDGER_TEST_GATE_WHO")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	ins, err := db.PrepareContext(ctx, "INSERT INTO t VALUES (?, 0)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			if err := writeMix(ctx, db, ins, who+"-"+strconv.Itoa(w), 30); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// fakeClock is a gate's clock that moves only when a test moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testGate returns a gate on a fake clock with the given starvation bound.
func testGate(starve time.Duration) (*gate, *fakeClock) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	g := newGate(time.Hour)
	g.starveAfter = starve
	g.now = clock.now
	return g, clock
}

// queued waits until n writers wait for g's slot.
func queued(g *gate, n int) {
	for {
		g.mu.Lock()
		l := len(g.queue)
		g.mu.Unlock()
		if l >= n {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// TestGateNewcomerTakesAFreeSlot: while the first waiter has waited less
// than the bound, a release leaves the slot free (telling that waiter, once)
// and a newcomer takes it; once it has waited the bound, the release hands
// the slot to it, and a newcomer queues. The waiter here is put in the
// queue by hand, so that nothing races the test's steps.
func TestGateNewcomerTakesAFreeSlot(t *testing.T) {
	ctx := context.Background()
	g, clock := testGate(10 * time.Millisecond)
	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := &gateWaiter{since: clock.now(), ch: make(chan bool, 1)}
	g.queue = append(g.queue, w)

	clock.add(9 * time.Millisecond)
	g.release()
	if g.held || len(w.ch) != 1 {
		t.Fatalf("after a release with a waiter of 9 ms: held %v, waiter told %d times; want free, told once", g.held, len(w.ch))
	}
	for i := range 3 {
		// The newcomer takes the free slot at once; the waiter is
		// not told twice.
		if err := g.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if len(g.queue) != 1 {
			t.Fatalf("newcomer %d queued, want it to take the free slot", i)
		}
		g.release()
		if len(w.ch) != 1 {
			t.Fatalf("waiter told %d times, want once", len(w.ch))
		}
	}

	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	clock.add(time.Millisecond) // the waiter has now waited the bound
	g.release()
	if !g.held || len(g.queue) != 0 || g.woken {
		t.Fatalf("after the bound: held %v, queue %d, woken %v; want the slot handed to the waiter", g.held, len(g.queue), g.woken)
	}
	if handed := <-w.ch; !handed || len(w.ch) != 0 {
		t.Fatalf("waiter got %v (then %d more); want the slot, once", handed, len(w.ch))
	}
	// The slot is the waiter's: a newcomer waits for it.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("newcomer while the slot is handed over: %v, want it to wait (cancelled)", err)
	}
}

// TestGateBackgroundQueues: background work (idriver.Background: a
// purge's batch) takes a free slot at once only when nobody waits; with a
// waiter told the slot came free, it queues behind that waiter, where a
// request would have taken the slot.
func TestGateBackgroundQueues(t *testing.T) {
	ctx := context.Background()
	bg := idriver.Background(ctx)
	g, clock := testGate(10 * time.Millisecond)
	if err := g.acquire(bg); err != nil || !g.held {
		t.Fatalf("background on a free gate, nobody waiting: %v, held %v; want the slot", err, g.held)
	}
	w := &gateWaiter{since: clock.now(), ch: make(chan bool, 1)}
	g.queue = append(g.queue, w)
	g.release() // the waiter (0 ms) is told, the slot is free

	cctx, cancel := context.WithCancel(bg)
	cancel()
	if err := g.acquire(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("background with a waiter and a free slot: %v; want it to queue (cancelled)", err)
	}
	if g.held || len(g.queue) != 1 || g.queue[0] != w {
		t.Fatalf("after the background writer gave up: held %v, queue %d; want free, the waiter alone", g.held, len(g.queue))
	}
	if err := g.acquire(ctx); err != nil || !g.held {
		t.Fatalf("a request in the same place: %v, held %v; want the free slot", err, g.held)
	}
}

// TestGateStarvationBound: a writer that takes the slot again and again
// (the warm connection) goes ahead of a waiter only until the waiter has
// waited the bound. The clock moves 1 ms at each of the hog's turns, so
// with a bound of 10 ms the waiter has the slot by the hog's tenth turn
// whatever the scheduling; with a bound of zero (strict order) by its first.
func TestGateStarvationBound(t *testing.T) {
	for _, bound := range []int{10, 0} {
		t.Run(fmt.Sprintf("%d ms", bound), func(t *testing.T) {
			ctx := context.Background()
			g, clock := testGate(time.Duration(bound) * time.Millisecond)
			if err := g.acquire(ctx); err != nil {
				t.Fatal(err)
			}
			var turns atomic.Int64
			got := make(chan int64, 1)
			go func() {
				if err := g.acquire(ctx); err != nil {
					t.Error(err)
				}
				got <- turns.Load()
				g.release()
			}()
			queued(g, 1)
			var at int64 = -1
			for at < 0 && turns.Load() < 1000 {
				// The hog holds the slot for one turn.
				clock.add(time.Millisecond)
				turns.Add(1)
				g.release()
				select {
				case at = <-got:
				default:
				}
				if err := g.acquire(ctx); err != nil {
					t.Fatal(err)
				}
				if at < 0 {
					select {
					case at = <-got:
					default:
					}
				}
			}
			g.release()
			if at < 0 {
				at = <-got // the hog let go at last
			}
			if at > int64(max(bound, 1)) {
				t.Errorf("the waiter had the slot after %d of the hog's turns, want at most %d", at, max(bound, 1))
			}
		})
	}
}

// TestGateStarvedInOrder: waiters that have all waited the bound are
// handed the slot in the order they came.
func TestGateStarvedInOrder(t *testing.T) {
	ctx := context.Background()
	g, clock := testGate(10 * time.Millisecond)
	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := g.acquire(ctx); err != nil {
				t.Error(err)
			}
			order <- i
			g.release()
		})
		queued(g, i+1)
	}
	clock.add(time.Hour)
	g.release()
	wg.Wait()
	close(order)
	want := 0
	for i := range order {
		if i != want {
			t.Errorf("waiter %d had the slot in turn %d", i, want)
		}
		want++
	}
}

// TestGateLeaveQueue: a waiter that gives up (timeout, cancellation) after
// it was told the slot is free passes that on to the next waiter; one that
// gives up after the slot was handed to it gives the slot back.
func TestGateLeaveQueue(t *testing.T) {
	ctx := context.Background()
	errGone := errors.New("gone")
	t.Run("told", func(t *testing.T) {
		g, clock := testGate(10 * time.Millisecond)
		if err := g.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w1 := &gateWaiter{since: clock.now(), ch: make(chan bool, 1)}
		w2 := &gateWaiter{since: clock.now(), ch: make(chan bool, 1)}
		g.queue = append(g.queue, w1, w2)
		g.release()
		if len(w1.ch) != 1 || len(w2.ch) != 0 {
			t.Fatalf("told: first %d, second %d; want the first only", len(w1.ch), len(w2.ch))
		}
		if err := g.leaveQueue(w1, errGone); err != errGone {
			t.Fatalf("leaveQueue = %v", err)
		}
		if g.held || len(g.queue) != 1 || len(w2.ch) != 1 || !g.woken {
			t.Fatalf("after the first left: held %v, queue %d, second told %d; want free, the second alone and told", g.held, len(g.queue), len(w2.ch))
		}
	})
	t.Run("handed", func(t *testing.T) {
		g, clock := testGate(10 * time.Millisecond)
		if err := g.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w := &gateWaiter{since: clock.now(), ch: make(chan bool, 1)}
		g.queue = append(g.queue, w)
		clock.add(time.Hour)
		g.release()
		if !g.held {
			t.Fatal("not handed over")
		}
		if err := g.leaveQueue(w, errGone); err != errGone {
			t.Fatalf("leaveQueue = %v", err)
		}
		if g.held || len(g.queue) != 0 {
			t.Fatalf("after leaving with the slot: held %v, queue %d; want it free", g.held, len(g.queue))
		}
		if err := g.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGateExclusive hammers a gate with the real clock and a short bound
// (so that both newcomers and hand-overs happen), some writers giving up
// at once (cancelled) or after a short wait (timeout): never two holders,
// and every writer that did not give up had its turn.
func TestGateExclusive(t *testing.T) {
	g := newGate(time.Millisecond)
	g.starveAfter = 100 * time.Microsecond
	var holders, turns, gaveUp atomic.Int64
	var wg sync.WaitGroup
	const writers, each = 8, 2000
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				ctx := context.Background()
				if w == 0 && i%7 == 0 {
					c, cancel := context.WithCancel(ctx)
					cancel()
					ctx = c
				}
				if err := g.acquire(ctx); err != nil {
					gaveUp.Add(1)
					continue
				}
				if holders.Add(1) != 1 {
					t.Error("two holders at once")
				}
				turns.Add(1)
				if i%50 == 0 {
					time.Sleep(2 * time.Millisecond) // longer than the others' wait: some time out
				}
				holders.Add(-1)
				g.release()
			}
		})
	}
	wg.Wait()
	if turns.Load()+gaveUp.Load() != writers*each {
		t.Errorf("turns %d + gave up %d, want %d", turns.Load(), gaveUp.Load(), writers*each)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held || len(g.queue) != 0 || g.woken {
		t.Errorf("at the end: held %v, queue %d, woken %v; want all clear", g.held, len(g.queue), g.woken)
	}
}
