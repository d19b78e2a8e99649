package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemledger/idemledger/driver"
)

var (
	// ErrInvalidOptions is returned (wrapped, with the reason) by New when an
	// Options field is out of range, for example a negative TTL.
	ErrInvalidOptions = errors.New("ledger: invalid options")

	// ErrInvalidRequest is returned (wrapped, with the reason) by every
	// operation when its input is refused before the database is touched:
	// an empty key, a key over the maximum length or with a byte outside
	// printable ASCII, a scope that is too long or not printable text, a
	// zero fingerprint, a negative batch size, an Outcome header name that
	// is not valid UTF-8, or a nil argument: a nil *Ledger, context,
	// transaction, claim or callback.
	// Nothing is stored for such a request. To tell a bad scope (the
	// server's fault) from a bad key (the client's), check the scope first
	// with CheckScope, as idemhttp does.
	ErrInvalidRequest = errors.New("ledger: invalid request")

	// ErrKeyReused is returned by Claim and Mutate when the idempotency key
	// already has a live record whose fingerprint differs from the
	// request's: the client reused the key for a different payload. HTTP
	// servers usually answer 422.
	ErrKeyReused = errors.New("ledger: idempotency key reused with a different fingerprint")

	// ErrInFlight is matched (errors.Is) by the *InFlightError that Claim
	// and Mutate return when another request with the same key and
	// fingerprint holds a live lease. HTTP servers usually answer 409 with
	// Retry-After.
	ErrInFlight = errors.New("ledger: idempotency key in flight")

	// ErrLeaseLost is returned by Complete, Release and Extend when the
	// caller no longer holds the claim's lease: another request took the
	// row over (its fence grew), the claim was released or completed
	// already, the row was purged, or the claim is a replay that never held
	// a lease. The caller must not assume its outcome was stored.
	ErrLeaseLost = errors.New("ledger: lease lost")

	// ErrNotFound is returned (wrapped) by Get when no record exists for the
	// scope and key.
	ErrNotFound = errors.New("ledger: record not found")
)

// InFlightError is returned by Claim and Mutate when the key is claimed by
// another request whose lease still holds. errors.Is(err, ErrInFlight)
// reports true for it; use errors.As to read RetryAfter.
type InFlightError struct {
	// RetryAfter is how long until the current lease runs out, rounded up
	// to whole milliseconds and at least one millisecond. The holder may
	// complete or extend before then.
	RetryAfter time.Duration
}

// Error reports the key as in flight and when to retry; it never contains
// the key or the scope.
func (e *InFlightError) Error() string {
	return fmt.Sprintf("%v; retry after %v", ErrInFlight, e.RetryAfter)
}

// Is reports whether target is ErrInFlight.
func (e *InFlightError) Is(target error) bool {
	return target == ErrInFlight
}

func invalidRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...)
}

// opError is the error of the operation op (claim, get, ...) that failed
// because of err. It reads "ledger: get: record not found": the "ledger: "
// that begins the texts of the package's own errors (ErrNotFound,
// ErrRetryable's wrapper, ...) is not repeated after the operation's name.
// errors.Is and errors.As see err through Unwrap.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "ledger: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "ledger: ")
}

func (e *opError) Unwrap() error { return e.err }

// wrapOp wraps err, the cause of operation op's failure, in an *opError.
func wrapOp(op string, err error) error {
	return &opError{op: op, err: err}
}

// ErrRetryable is matched (errors.Is) by the errors of Claim, Mutate,
// Complete, Release, Extend, Purge and Stats that a new attempt of the
// caller's whole transaction may cure; the database aborted the
// transaction, so roll it back and run it again from its start (a retry
// inside it would fail the same way). On PostgreSQL these are serialization
// failures (SQLSTATE 40001) and detected deadlocks (40P01). The first is
// what a duplicate gets under REPEATABLE READ or SERIALIZABLE when it waited
// for the first request's row: that row was committed after the
// duplicate's snapshot, so the duplicate may not see it, and the retry
// replays the stored outcome. Under READ COMMITTED (PostgreSQL's default)
// the duplicate waits and replays without it. On SQLite they are lock
// failures (SQLITE_BUSY, SQLITE_LOCKED): another connection, often of
// another process, held the database past busy_timeout. The database's own
// error stays reachable with errors.As (*pgconn.PgError, or
// modernc.org/sqlite's *sqlite.Error). A claim that lost the race for its
// record several times running (it changed between each read and write:
// takeovers of expired records, releases, purges) matches it too.
var ErrRetryable = errors.New("ledger: retryable")

// ErrNotMigrated is matched (errors.Is) by the error of an operation, or
// of New on SQLite, that found no ledger table: schema.Migrate has not run
// on this database (or, on PostgreSQL, on the connection's search_path).
// It is a deployment error, not an outage: idemhttp and idemgrpc refuse
// requests then even with FailOpen, which would otherwise leave every
// request unprotected for as long as the table is missing.
var ErrNotMigrated = errors.New("ledger: not migrated")

// ErrBusy is matched (errors.Is), together with ErrRetryable, by the errors
// of SQLite lock failures (SQLITE_BUSY, SQLITE_LOCKED): another connection,
// often of another process, held the database's write lock past
// busy_timeout. The store is working but contended, not down: HTTP servers
// answer 503 with Retry-After rather than report an outage.
var ErrBusy = errors.New("ledger: busy")

// Retryable SQLSTATEs (PostgreSQL documentation, Appendix A, class 40,
// "Transaction Rollback"; and 13.2.2 and 13.2.3 on the repeatable read and
// serializable levels): the transaction lost a race that a new attempt of
// the whole transaction may win.
const (
	sqlstateSerializationFailure = "40001"
	sqlstateDeadlockDetected     = "40P01"
	sqlstateUndefinedTable       = "42P01" // class 42, "Syntax Error or Access Rule Violation"
)

// SQLite's primary result codes for a lock it could not get
// (https://sqlite.org/rescode.html): SQLITE_BUSY when another connection
// held the database past busy_timeout, or the snapshot of a read
// transaction went stale (SQLITE_BUSY_SNAPSHOT); SQLITE_LOCKED for a
// conflict inside one shared-cache connection.
const (
	sqliteError  = 1 // SQLITE_ERROR, "no such table" among others
	sqliteBusy   = 5
	sqliteLocked = 6
)

// classify marks the errors that a retry of the caller's transaction may
// cure with ErrRetryable, keeping the database's error reachable. Codes are
// read through the driver package's small interfaces, so that the ledger
// links no database package: a PostgreSQL error's SQLSTATE
// (*pgconn.PgError), a SQLite error's result code (modernc.org/sqlite's
// *sqlite.Error).
func classify(err error) error {
	var pg driver.SQLStateError
	if errors.As(err, &pg) {
		switch pg.SQLState() {
		case sqlstateSerializationFailure, sqlstateDeadlockDetected:
			return &retryableError{err: err}
		case sqlstateUndefinedTable:
			return &notMigratedError{err: err}
		}
		return err
	}
	var coded driver.CodeError
	if errors.As(err, &coded) {
		switch c := coded.Code() & 0xff; {
		case c == sqliteBusy || c == sqliteLocked:
			return &retryableError{err: err, busy: true}
		case c == sqliteError && strings.Contains(err.Error(), "no such table"):
			// SQLITE_ERROR has no extended code for this: the message
			// is all SQLite gives (https://sqlite.org/rescode.html#error).
			return &notMigratedError{err: err}
		}
	}
	return err
}

// notMigratedError marks err as matching ErrNotMigrated, and says what to
// do about it.
type notMigratedError struct{ err error }

func (e *notMigratedError) Error() string {
	return "ledger: not migrated (run schema.Migrate): " + e.err.Error()
}
func (e *notMigratedError) Unwrap() error        { return e.err }
func (e *notMigratedError) Is(target error) bool { return target == ErrNotMigrated }

// retryableError marks err as matching ErrRetryable, and ErrBusy too when
// busy is set.
type retryableError struct {
	err  error
	busy bool
}

func (e *retryableError) Error() string { return "ledger: retryable: " + e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }
func (e *retryableError) Is(target error) bool {
	return target == ErrRetryable || e.busy && target == ErrBusy
}
