package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
)

// DriverName is the database/sql driver name that modernc.org/sqlite
// registers and that Open uses.
const DriverName = "sqlite"

// MaxBusyTimeout is the longest [Options.BusyTimeout]: SQLite keeps
// busy_timeout in milliseconds in a C int (sqlite3_busy_timeout), so
// 2^31-1 ms, about 24.9 days.
const MaxBusyTimeout = (1<<31 - 1) * time.Millisecond

// Defaults, used for the zero fields of Options, and so by Open and DSN.
const (
	DefaultBusyTimeout  = 10 * time.Second
	DefaultSynchronous  = SynchronousFull
	DefaultMaxOpenConns = 4
)

// ErrPragmaMismatch is returned (wrapped) by Open when a setting read back
// from a live connection differs from the one requested in the DSN.
var ErrPragmaMismatch = errors.New("sqlite: setting did not take effect")

// ErrInvalidOptions is returned (wrapped, with the field and the reason)
// by [Options.Open] when a field of its Options is out of range.
var ErrInvalidOptions = errors.New("sqlite: invalid options")

// Synchronous is a value of PRAGMA synchronous
// (https://sqlite.org/pragma.html#pragma_synchronous). The numbers are the
// ones SQLite reports when the pragma is read back.
type Synchronous int

const (
	// SynchronousNormal syncs the WAL only at checkpoints. The database
	// stays consistent, but the transactions committed just before a power
	// loss or OS crash (not an application crash) may roll back. For a
	// ledger that guards effects outside the database (lease mode), such a
	// rollback can let a retry repeat the effect.
	SynchronousNormal Synchronous = 1
	// SynchronousFull syncs the WAL at every commit: a committed claim or
	// outcome survives power loss. It is the default because a lost
	// completion is a duplicate side effect.
	SynchronousFull Synchronous = 2
	// SynchronousExtra is FULL plus a sync of the directory after a
	// journal is deleted; in WAL mode it behaves like FULL.
	SynchronousExtra Synchronous = 3
)

// String returns the pragma keyword: "NORMAL", "FULL" or "EXTRA".
func (s Synchronous) String() string {
	switch s {
	case SynchronousNormal:
		return "NORMAL"
	case SynchronousFull:
		return "FULL"
	case SynchronousExtra:
		return "EXTRA"
	}
	return "Synchronous(" + strconv.Itoa(int(s)) + ")"
}

// Options are the settings of [Options.Open]. The zero value of a field
// means its default, so Options{} is what [Open] uses; Options values are
// plain data, safe to copy and to share.
type Options struct {
	// Synchronous is PRAGMA synchronous; zero means [DefaultSynchronous]
	// (FULL). Values other than zero and the three constants are an error.
	Synchronous Synchronous
	// BusyTimeout is PRAGMA busy_timeout, how long a connection waits for
	// a lock before it fails with SQLITE_BUSY, kept in whole milliseconds;
	// zero means [DefaultBusyTimeout] (10 s). A value between zero and 1 ms,
	// a negative one, or one above [MaxBusyTimeout] is an error.
	BusyTimeout time.Duration
	// MaxOpenConns caps the pool, which keeps as many idle connections as
	// it may open; zero means [DefaultMaxOpenConns] (4). See the package
	// documentation for why the pool is capped. Negative is an error.
	MaxOpenConns int
}

// resolve returns o with its defaults filled in, or an error naming the
// first field that is out of range.
func (o Options) resolve() (Options, error) {
	switch o.Synchronous {
	case 0:
		o.Synchronous = DefaultSynchronous
	case SynchronousNormal, SynchronousFull, SynchronousExtra:
	default:
		return o, fmt.Errorf("%w: Synchronous: unsupported mode %v", ErrInvalidOptions, o.Synchronous)
	}
	switch {
	case o.BusyTimeout == 0:
		o.BusyTimeout = DefaultBusyTimeout
	case o.BusyTimeout < time.Millisecond:
		return o, fmt.Errorf("%w: BusyTimeout: %v is below 1ms", ErrInvalidOptions, o.BusyTimeout)
	case o.BusyTimeout > MaxBusyTimeout:
		return o, fmt.Errorf("%w: BusyTimeout: %v is above %v", ErrInvalidOptions, o.BusyTimeout, MaxBusyTimeout)
	}
	switch {
	case o.MaxOpenConns == 0:
		o.MaxOpenConns = DefaultMaxOpenConns
	case o.MaxOpenConns < 0:
		return o, fmt.Errorf("%w: MaxOpenConns: %d is negative", ErrInvalidOptions, o.MaxOpenConns)
	}
	return o, nil
}

// DSN returns the modernc.org/sqlite data source name that Open uses for
// path with the default settings: a file: URI with WAL, busy_timeout,
// synchronous and _txlock=immediate. Use it with sql.Open([DriverName], …)
// when a pool must be built by hand; Open is preferable because it also
// queues the pool's writers in order (see the package doc, Writers in
// order), checks the settings, and waits out the lock conflicts of processes that
// open a new file at once, which a pool built by hand may meet as
// SQLITE_BUSY on its first connection.
func DSN(path string) string {
	o, _ := Options{}.resolve()
	return o.dsn(path)
}

// dsn is the data source name for path with o's settings; o is resolved.
func (o Options) dsn(path string) string {
	var b strings.Builder
	b.WriteString("file:")
	b.WriteString(escapePath(path))
	b.WriteString("?_txlock=immediate")
	fmt.Fprintf(&b, "&_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds())
	b.WriteString("&_pragma=journal_mode(WAL)")
	fmt.Fprintf(&b, "&_pragma=synchronous(%s)", o.Synchronous)
	return b.String()
}

// escapePath makes path safe inside a file: URI (https://sqlite.org/uri.html):
// '%', '?' and '#' would otherwise start an escape, the query or a fragment.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// Open opens the SQLite database file at path with the default [Options]:
// it is Options{}.Open(path).
func Open(path string) (*sql.DB, error) { return Options{}.Open(path) }

// Open opens the SQLite database file at path, creating it if needed, with
// the settings described in the package documentation and o's, and
// verifies on a live connection that journal_mode, busy_timeout and
// synchronous took effect. It refuses an empty path, ":memory:" and paths
// that are already URIs ("file:…"), since an in-memory database cannot use
// WAL.
//
// The pool queues its write transactions and writing statements in Go, in
// order, so that its connections never wait for one another inside SQLite's
// busy handler: see the package documentation, Writers in order. It
// checkpoints its WAL itself, on one connection beyond MaxOpenConns that
// it opens at its first checkpoint and closes with the pool (the package
// documentation says when and why).
//
// Several processes may open the same file at once, even one that does
// not exist yet: see the package documentation's section on opening.
//
// The caller owns the returned *[sql.DB] and closes it. Errors: one wrapping
// [ErrInvalidOptions] for an out-of-range field of o (nothing is opened
// then); or, prefixed with "sqlite: open" and the path, the refusal of the path, an error from
// the driver (the last one when it was SQLITE_BUSY until the busy timeout
// ran out), or one wrapping [ErrPragmaMismatch].
func (o Options) Open(path string) (*sql.DB, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	switch {
	case path == "":
		return nil, fmt.Errorf("sqlite: open %q: want a file path", path)
	case path == ":memory:":
		return nil, fmt.Errorf("sqlite: open %q: want a file path (an in-memory database cannot use WAL)", path)
	case strings.HasPrefix(path, "file:"):
		return nil, fmt.Errorf("sqlite: open %q: want a file path, not a URI: Open writes the URI and its parameters itself (see DSN)", path)
	}
	conn, err := newConnector(o.dsn(path), o.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(o.MaxOpenConns)
	db.SetMaxIdleConns(o.MaxOpenConns)
	if err := retryLocked(o.BusyTimeout, func() error { return verify(db, o) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return db, nil
}

// isLocked reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any
// extended code of them): see interpretError.
func isLocked(err error) bool { return errors.Is(interpretError(err), idriver.ErrBusy) }

// Backoff between two attempts of retryLocked: it doubles from the first
// to the last, each sleep drawn at random between half and all of it so
// that processes that failed together do not retry together.
const (
	firstBackoff = time.Millisecond
	maxBackoff   = 50 * time.Millisecond
)

// retryLocked calls f until it returns nil or an error other than
// SQLITE_BUSY or SQLITE_LOCKED, sleeping a short, growing backoff between
// calls, for at most window after the first call; then it returns f's
// last error.
//
// It exists for the first connections to a new file, which is still in
// rollback-journal mode. Their DSN switches it to WAL, which needs the
// write lock after the pragma has begun to read the file. When another
// connection (often another process doing the same) holds that lock,
// SQLite fails the pragma at once with SQLITE_BUSY instead of calling the
// busy handler, since waiting there while holding a read lock could
// deadlock (https://sqlite.org/c3ref/busy_handler.html): busy_timeout does
// not help. The failed connection is discarded; a new one, a little later,
// finds the file in WAL mode already or the lock free.
func retryLocked(window time.Duration, f func() error) error {
	deadline := time.Now().Add(window)
	backoff := firstBackoff
	for {
		err := f()
		if err == nil || !isLocked(err) {
			return err
		}
		sleep := backoff/2 + rand.N(backoff/2+1)
		if time.Now().Add(sleep).After(deadline) {
			return err
		}
		time.Sleep(sleep)
		backoff = min(2*backoff, maxBackoff)
	}
}

// initAutoVacuum gives a new, empty file incremental auto-vacuum, so that
// Driver.Reclaim can give the space of purged records back in short steps.
// The mode can change only while the file has no table (or by a VACUUM that
// rewrites it, see Driver.Reclaim), and it is recorded in the file only when
// something is written: the VACUUM of the empty file writes it, before any
// other connection creates a table. A file that has tables keeps its mode.
func initAutoVacuum(ctx context.Context, conn *sql.Conn) error {
	var tables int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "VACUUM")
	return err
}

// verify reads the pragmas back. The DSN is applied to every new
// connection, so one connection stands for all of them.
func verify(db *sql.DB, o Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.BusyTimeout+5*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()

	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("%w: journal_mode is %q, want \"wal\"", ErrPragmaMismatch, mode)
	}
	if err := initAutoVacuum(ctx, conn); err != nil {
		return err
	}
	var busy int64
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
		return err
	}
	if busy != o.BusyTimeout.Milliseconds() {
		return fmt.Errorf("%w: busy_timeout is %d ms, want %d", ErrPragmaMismatch, busy, o.BusyTimeout.Milliseconds())
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if Synchronous(sync) != o.Synchronous {
		return fmt.Errorf("%w: synchronous is %v, want %v", ErrPragmaMismatch, Synchronous(sync), o.Synchronous)
	}
	var pages int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		return err
	}
	if pages != 0 {
		return fmt.Errorf("%w: wal_autocheckpoint is %d pages, want 0 (the pool checkpoints the WAL itself)", ErrPragmaMismatch, pages)
	}
	return nil
}
