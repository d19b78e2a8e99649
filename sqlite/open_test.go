package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/sqlite"
)

func TestDSN(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"/tmp/a.db", "file:/tmp/a.db?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"},
		{"data/x?y#z%.db", "file:data/x%3fy%23z%25.db?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"},
	}
	for _, tt := range tests {
		if got := sqlite.DSN(tt.path); got != tt.want {
			t.Errorf("DSN(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func pragmas(t *testing.T, db *sql.DB) (mode string, busy, sync int) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for q, dst := range map[string]any{"PRAGMA journal_mode": &mode, "PRAGMA busy_timeout": &busy, "PRAGMA synchronous": &sync} {
		if err := conn.QueryRowContext(ctx, q).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return mode, busy, sync
}

func TestOpenSettings(t *testing.T) {
	tests := []struct {
		name     string
		opts     sqlite.Options
		busy     int
		sync     int
		maxConns int
	}{
		{"defaults", sqlite.Options{}, 10000, 2, 4},
		{"normal", sqlite.Options{Synchronous: sqlite.SynchronousNormal}, 10000, 1, 4},
		{"extra, short timeout, one conn", sqlite.Options{
			Synchronous:  sqlite.SynchronousExtra,
			BusyTimeout:  250 * time.Millisecond,
			MaxOpenConns: 1,
		}, 250, 3, 1},
		{"full, explicit", sqlite.Options{Synchronous: sqlite.SynchronousFull, BusyTimeout: time.Millisecond, MaxOpenConns: 9}, 1, 2, 9},
		{"longest busy timeout", sqlite.Options{BusyTimeout: sqlite.MaxBusyTimeout}, 1<<31 - 1, 2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := tt.opts.Open(filepath.Join(t.TempDir(), "a.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			mode, busy, sync := pragmas(t, db)
			if mode != "wal" || busy != tt.busy || sync != tt.sync {
				t.Errorf("pragmas = %q, %d, %d; want \"wal\", %d, %d", mode, busy, sync, tt.busy, tt.sync)
			}
			if got := db.Stats().MaxOpenConnections; got != tt.maxConns {
				t.Errorf("MaxOpenConnections = %d, want %d", got, tt.maxConns)
			}
		})
	}
}

// TestOpenRefuses: a bad path or an out-of-range setting is an error that
// names it, and nothing is created on disk.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.db")
	tests := []struct {
		name     string
		path     string
		opts     sqlite.Options
		want     string // the whole error, or with contains a part of it
		contains bool
	}{
		{"empty path", "", sqlite.Options{}, `sqlite: open "": want a file path`, false},
		{"memory", ":memory:", sqlite.Options{}, `sqlite: open ":memory:": want a file path (an in-memory database cannot use WAL)`, false},
		{"uri", "file:x.db", sqlite.Options{}, `sqlite: open "file:x.db": want a file path, not a URI: Open writes the URI and its parameters itself (see DSN)`, false},
		{"synchronous off", file, sqlite.Options{Synchronous: -1}, "sqlite: invalid options: Synchronous: unsupported mode Synchronous(-1)", false},
		{"synchronous 4", file, sqlite.Options{Synchronous: 4}, "sqlite: invalid options: Synchronous: unsupported mode Synchronous(4)", false},
		{"busy timeout below 1ms", file, sqlite.Options{BusyTimeout: time.Millisecond - 1}, "sqlite: invalid options: BusyTimeout: 999.999µs is below 1ms", false},
		{"negative busy timeout", file, sqlite.Options{BusyTimeout: -time.Second}, "sqlite: invalid options: BusyTimeout: -1s is below 1ms", false},
		{"busy timeout above SQLite's int", file, sqlite.Options{BusyTimeout: 720 * time.Hour}, "sqlite: invalid options: BusyTimeout: 720h0m0s is above 596h31m23.647s", false},
		{"negative conns", file, sqlite.Options{MaxOpenConns: -1}, "sqlite: invalid options: MaxOpenConns: -1 is negative", false},
		{"bad setting and bad path", "", sqlite.Options{MaxOpenConns: -1}, "sqlite: invalid options: MaxOpenConns: -1 is negative", false},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "a.db"), sqlite.Options{}, "unable to open database file", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := tt.opts.Open(tt.path)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if want := strings.HasPrefix(tt.want, "sqlite: invalid options: "); errors.Is(err, sqlite.ErrInvalidOptions) != want {
				t.Errorf("errors.Is(%q, ErrInvalidOptions) = %t, want %t", err, !want, want)
			}
			if tt.contains && !strings.Contains(err.Error(), tt.want) || !tt.contains && err.Error() != tt.want {
				t.Errorf("error %q, want %q", err, tt.want)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a refused Open touched %s: %v", file, err)
			}
		})
	}
}

// TestImmediateTransactions shows why _txlock=immediate matters: a second
// transaction cannot even begin while the first holds the write lock, so
// no transaction ever fails later with SQLITE_BUSY_SNAPSHOT.
func TestImmediateTransactions(t *testing.T) {
	db, err := sqlite.Options{BusyTimeout: 50 * time.Millisecond}.Open(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	tx1, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	// tx1 has not written anything, yet it holds the write lock.
	tx2, err := db.BeginTx(ctx, nil)
	if err == nil {
		tx2.Rollback()
		t.Fatal("second BEGIN succeeded while the first transaction was open")
	}
	if !strings.Contains(err.Error(), "SQLITE_BUSY") && !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("second BEGIN: %v, want a busy error", err)
	}
	// Readers outside transactions are not blocked (WAL).
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatalf("read during write transaction: %v", err)
	}
}

// holdWriteLock creates path as a rollback-journal database (the state of
// a new file before Open switches it to WAL) and holds its write lock in
// an open transaction, as another process half-way through its first
// write would. The returned function releases the lock.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	other, err := sql.Open(sqlite.DriverName, "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if _, err := other.Exec("CREATE TABLE other (x)"); err != nil {
		t.Fatal(err)
	}
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO other VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// TestOpenWaitsForWALSwitch: while another connection holds the write
// lock of a file still in rollback-journal mode, switching it to WAL
// fails at once with SQLITE_BUSY, whatever busy_timeout says. Open tries
// again until the lock is free.
func TestOpenWaitsForWALSwitch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	release := holdWriteLock(t, path)
	const hold = 300 * time.Millisecond
	// The instant just before the release: Open cannot succeed earlier.
	// (Timed from Open's start instead, the check failed now and then, as
	// the timer is armed a little before Open starts.)
	releasing := make(chan time.Time, 1)
	time.AfterFunc(hold, func() {
		releasing <- time.Now()
		release()
	})
	db, err := sqlite.Open(path)
	returned := time.Now()
	if err != nil {
		t.Fatalf("Open while another connection held the lock for %v: %v", hold, err)
	}
	defer db.Close()
	if at := <-releasing; returned.Before(at) {
		t.Errorf("Open returned %v before the lock was released", at.Sub(returned))
	}
	if mode, _, _ := pragmas(t, db); mode != "wal" {
		t.Errorf("journal_mode = %q, want \"wal\"", mode)
	}
}

// TestOpenLockedPastBusyTimeout: Open stops trying once the busy timeout
// has run out, and reports SQLite's error.
func TestOpenLockedPastBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	holdWriteLock(t, path)
	const timeout = 200 * time.Millisecond
	start := time.Now()
	db, err := sqlite.Options{BusyTimeout: timeout}.Open(path)
	elapsed := time.Since(start)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded while another connection held the lock")
	}
	want := fmt.Sprintf("sqlite: open %q: database is locked", path)
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Errorf("Open = %v, want %s … SQLITE_BUSY", err, want)
	}
	// The last try starts at most one sleep (50 ms) before the timeout
	// runs out, and may wait in the busy handler up to one more timeout.
	if elapsed < timeout-50*time.Millisecond || elapsed > 2*timeout+5*time.Second {
		t.Errorf("Open gave up after %v, want about %v", elapsed, timeout)
	}
}
