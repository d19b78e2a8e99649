package ledger

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	idriver "github.com/idemledger/idemledger/driver"
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

	// ErrCommitted is matched (errors.Is) by the *CommittedError that Claim
	// and Mutate return when the key's record passed its commit point
	// (Ledger.Commit) and its holder vanished without storing an outcome:
	// the operation's effect happened, and its answer is lost. Running it
	// again would repeat the effect, so the record is not taken over unless
	// the request sets Recover. HTTP servers answer 410
	// (idemhttp.CodeOutcomeNotStored), as for an answer too large to store.
	ErrCommitted = errors.New("ledger: operation passed its commit point, outcome not stored")

	// ErrOutcomeUnknown is matched (errors.Is) by the error of an operation
	// whose statement may or may not have run: the connection to the
	// database was lost (reset, closed, timed out, the server shut down)
	// after the statement may have reached the server, or SQLite reported an
	// I/O error. Complete, Release, Commit and Extend retry such faults by
	// themselves until the claim's lease runs out; an error that still
	// matches ErrOutcomeUnknown then means the store stayed unreachable.
	ErrOutcomeUnknown = errors.New("ledger: outcome unknown, connection lost")
)

// CommittedError is returned by Claim and Mutate for a record in flight
// that passed its commit point and whose lease ran out without an outcome
// (ErrCommitted). errors.Is(err, ErrCommitted) reports true for it.
type CommittedError struct {
	// Fence is the fence of the holder that marked the commit point.
	Fence int64
	// CommittedAt is when the commit point was marked (UTC, millisecond
	// resolution).
	CommittedAt time.Time
}

// Error says the operation passed its commit point; it never contains the
// key or the scope.
func (e *CommittedError) Error() string {
	return fmt.Sprintf("%v (fence %d, at %s)", ErrCommitted, e.Fence, e.CommittedAt.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrCommitted.
func (e *CommittedError) Is(target error) bool { return target == ErrCommitted }

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
	// Class 08, "Connection Exception", and class 57's shutdowns: the
	// server's side of the connection is gone, and with it the knowledge
	// of whether the last statement committed.
	sqlstateConnectionClass = "08"
	sqlstateAdminShutdown   = "57P01"
	sqlstateCrashShutdown   = "57P02"
	sqlstateCannotConnect   = "57P03"
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
	sqliteIOErr  = 10 // SQLITE_IOERR: the OS failed a read, write or sync
)

// classify marks the errors that a retry of the caller's transaction may
// cure with ErrRetryable, keeping the database's error reachable. Codes are
// read through the driver package's small interfaces, so that the ledger
// links no database package: a PostgreSQL error's SQLSTATE
// (*pgconn.PgError), a SQLite error's result code (modernc.org/sqlite's
// *sqlite.Error).
func classify(err error) error {
	var pg idriver.SQLStateError
	if errors.As(err, &pg) {
		switch code := pg.SQLState(); {
		case code == sqlstateSerializationFailure, code == sqlstateDeadlockDetected:
			return &retryableError{err: err}
		case code == sqlstateUndefinedTable:
			return &notMigratedError{err: err}
		case strings.HasPrefix(code, sqlstateConnectionClass), code == sqlstateAdminShutdown,
			code == sqlstateCrashShutdown, code == sqlstateCannotConnect:
			return &unknownError{err: err}
		}
		return err
	}
	var coded idriver.CodeError
	if errors.As(err, &coded) {
		switch c := coded.Code() & 0xff; {
		case c == sqliteBusy || c == sqliteLocked:
			return &retryableError{err: err, busy: true}
		case c == sqliteError && strings.Contains(err.Error(), "no such table"):
			// SQLITE_ERROR has no extended code for this: the message
			// is all SQLite gives (https://sqlite.org/rescode.html#error).
			return &notMigratedError{err: err}
		case c == sqliteIOErr:
			return &unknownError{err: err}
		}
		return err
	}
	if connectionLost(err) {
		return &unknownError{err: err}
	}
	return err
}

// connectionLost reports whether err says the connection to the database
// broke: the network failed (reset, refused, timed out, closed), the
// server's reply ended early, or database/sql's driver gave the connection
// up. Whether the statement ran is then unknown.
func connectionLost(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr)
}

// unknownError marks err as matching ErrOutcomeUnknown.
type unknownError struct{ err error }

func (e *unknownError) Error() string        { return "ledger: outcome unknown: " + e.err.Error() }
func (e *unknownError) Unwrap() error        { return e.err }
func (e *unknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

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
