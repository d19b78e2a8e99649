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
