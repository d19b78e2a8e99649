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

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// DriverName is the database/sql driver name that modernc.org/sqlite
// registers and that Open uses.
const DriverName = "sqlite"

// Defaults used by Open and DSN when no Option says otherwise.
const (
	DefaultBusyTimeout  = 10 * time.Second
	DefaultSynchronous  = SynchronousFull
	DefaultMaxOpenConns = 4
)

// ErrPragmaMismatch is returned (wrapped) by Open when a setting read back
// from a live connection differs from the one requested in the DSN.
var ErrPragmaMismatch = errors.New("sqlite: setting did not take effect")

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

type config struct {
	busyTimeout  time.Duration
	synchronous  Synchronous
	maxOpenConns int
}

// Option changes one setting of Open.
type Option func(*config) error

// WithSynchronous sets PRAGMA synchronous (default SynchronousFull). Any
// value other than the three constants makes Open fail.
func WithSynchronous(s Synchronous) Option {
	return func(c *config) error {
		if s != SynchronousNormal && s != SynchronousFull && s != SynchronousExtra {
			return fmt.Errorf("sqlite: unsupported synchronous mode %v", s)
		}
		c.synchronous = s
		return nil
	}
}

// WithBusyTimeout sets PRAGMA busy_timeout, how long a connection waits for
// a lock before it fails with SQLITE_BUSY (default 10 s). It is kept in whole
// milliseconds and must be at least one.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("sqlite: busy timeout %v below 1ms", d)
		}
		c.busyTimeout = d
		return nil
	}
}

// WithMaxOpenConns sets the pool's maximum number of open connections
// (default 4; see the package documentation for why the pool is capped).
// The pool keeps as many idle connections as it may open. n must be at
// least one.
func WithMaxOpenConns(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("sqlite: max open connections %d below 1", n)
		}
		c.maxOpenConns = n
		return nil
	}
}

func newConfig(opts []Option) (config, error) {
	c := config{
		busyTimeout:  DefaultBusyTimeout,
		synchronous:  DefaultSynchronous,
		maxOpenConns: DefaultMaxOpenConns,
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// DSN returns the modernc.org/sqlite data source name that Open uses for
// path with the default settings: a file: URI with WAL, busy_timeout,
// synchronous and _txlock=immediate. Use it with sql.Open(DriverName, …)
// when a pool must be built by hand; Open is preferable because it also
// checks the settings, and waits out the lock conflicts of processes that
// open a new file at once, which a pool built by hand may meet as
// SQLITE_BUSY on its first connection.
func DSN(path string) string {
	c, _ := newConfig(nil)
	return dsn(path, c)
}

func dsn(path string, c config) string {
	var b strings.Builder
	b.WriteString("file:")
	b.WriteString(escapePath(path))
	b.WriteString("?_txlock=immediate")
	fmt.Fprintf(&b, "&_pragma=busy_timeout(%d)", c.busyTimeout.Milliseconds())
	b.WriteString("&_pragma=journal_mode(WAL)")
	fmt.Fprintf(&b, "&_pragma=synchronous(%s)", c.synchronous)
	return b.String()
}

// escapePath makes path safe inside a file: URI (https://sqlite.org/uri.html):
// '%', '?' and '#' would otherwise start an escape, the query or a fragment.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// Open opens the SQLite database file at path, creating it if needed, with
// the settings described in the package documentation, and verifies on a
// live connection that journal_mode, busy_timeout and synchronous took
// effect. It fails for an empty path, for ":memory:" and for paths that
// are already URIs ("file:…"), since an in-memory database cannot use WAL.
//
// Several processes (or goroutines) may open the same file at once, even
// one that does not exist yet: when the first connection's setup fails
// with SQLITE_BUSY or SQLITE_LOCKED, as it can while another process
// switches a new file to WAL, Open tries again on a new connection after
// a short random sleep (about 1 ms at first, growing to at most 50 ms),
// for up to the busy timeout (10 s by default) after its first try.
//
// The caller owns the returned *sql.DB and closes it. Errors: an Option's
// error; or, prefixed with "sqlite: open" and the path, the refusal of
// the path or of a nil Option, an error from the driver (the last one
// when it was SQLITE_BUSY until the busy timeout ran out), or one
// wrapping ErrPragmaMismatch.
func Open(path string, opts ...Option) (*sql.DB, error) {
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("sqlite: open %q: opts[%d] is a nil Option", path, i)
		}
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: want a file path", path)
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(DriverName, dsn(path, c))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	db.SetMaxOpenConns(c.maxOpenConns)
	db.SetMaxIdleConns(c.maxOpenConns)
	if err := retryLocked(c.busyTimeout, func() error { return verify(db, c) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return db, nil
}

// SQLite's primary result codes for a lock it could not get
// (https://sqlite.org/rescode.html).
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// isLocked reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any
// extended code of them), read through the Code method of
// modernc.org/sqlite's *sqlite.Error.
func isLocked(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		c := coded.Code() & 0xff
		return c == sqliteBusy || c == sqliteLocked
	}
	return false
}

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

// verify reads the pragmas back. The DSN is applied to every new
// connection, so one connection stands for all of them.
func verify(db *sql.DB, c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.busyTimeout+5*time.Second)
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
	var busy int64
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
		return err
	}
	if busy != c.busyTimeout.Milliseconds() {
		return fmt.Errorf("%w: busy_timeout is %d ms, want %d", ErrPragmaMismatch, busy, c.busyTimeout.Milliseconds())
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if Synchronous(sync) != c.synchronous {
		return fmt.Errorf("%w: synchronous is %v, want %v", ErrPragmaMismatch, Synchronous(sync), c.synchronous)
	}
	return nil
}
