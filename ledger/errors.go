package ledger

import (
	"errors"
	"fmt"
	"strings"
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
	// with [CheckScope], as idemhttp does.
	ErrInvalidRequest = errors.New("ledger: invalid request")

	// ErrKeyReused is returned by Claim and Mutate when the idempotency key
	// already has a live record whose fingerprint differs from the
	// request's: the client reused the key for a different payload. HTTP
	// servers usually answer 422.
	ErrKeyReused = errors.New("ledger: idempotency key reused with a different fingerprint")

	// ErrInFlight is matched ([errors.Is]) by the *[InFlightError] that Claim
	// and Mutate return when another request with the same key and
	// fingerprint holds a live lease. HTTP servers usually answer 409 with
	// Retry-After.
	ErrInFlight = errors.New("ledger: idempotency key in flight")

	// ErrLeaseLost is returned by Complete, Release and Extend when the
	// caller no longer holds the claim's lease: another request took the
	// row over (its fence grew), the claim was released or completed
	// already, the row was purged, or the claim is a replay that never held
	// a lease. The caller must not assume its outcome was stored. The
	// integrations' handler contexts (idemhttp, idemgrpc, idemconnect,
	// consume) end with a cause matching it when the lease is lost, or
	// ran out with no extension confirmed. The commit of a transaction
	// whose database step's record travels with the COMMIT
	// ([Ledger.RecordStepTx]) fails with an error matching it when that
	// record finds the lease lost.
	ErrLeaseLost = idriver.ErrLeaseLost

	// ErrNotFound is returned (wrapped) by Get when no record exists for the
	// scope and key.
	ErrNotFound = errors.New("ledger: record not found")

	// ErrCommitted is matched ([errors.Is]) by the *[CommittedError] that Claim
	// and Mutate return when the key's record passed its commit point
	// ([Ledger.Commit]) and its holder vanished without storing an outcome:
	// the operation's effect happened, and its answer is lost. Running it
	// again would repeat the effect, so the record is not taken over unless
	// the request sets Recover. HTTP servers answer 410
	// (idemhttp.CodeOutcomeNotStored), as for an answer too large to store.
	ErrCommitted = errors.New("ledger: operation passed its commit point, outcome not stored")

	// ErrOutcomeUnknown is matched ([errors.Is]) by the error of an operation
	// whose statement may or may not have run: the connection to the
	// database was lost (reset, closed, timed out, the server shut down)
	// after the statement may have reached the server, or SQLite reported an
	// I/O error. Complete, Release, Commit and Extend retry such faults by
	// themselves until the claim's lease runs out; an error that still
	// matches ErrOutcomeUnknown then means the store stayed unreachable.
	ErrOutcomeUnknown = errors.New("ledger: outcome unknown, connection lost")
)

// ErrOutcomeTooLarge is matched ([errors.Is]) by the *[OutcomeTooLargeError]
// that Complete and CompleteTx return when the outcome is larger than the
// store can keep: an engine's limit on a value, a row or a message
// (SQLite's SQLITE_MAX_LENGTH, PostgreSQL's 1 GB field, MySQL's
// max_allowed_packet). Nothing was stored, and the claim's lease still
// holds: its holder stores something smaller (a marker saying the answer
// was not kept) with another Complete, so that a retry is never taken for
// a first request and run again.
var ErrOutcomeTooLarge = errors.New("ledger: outcome too large to store")

// OutcomeTooLargeError is the error of a Complete whose outcome the store
// cannot keep ([ErrOutcomeTooLarge]). The engine's own error, when it
// refused the outcome, stays reachable with [errors.As].
type OutcomeTooLargeError struct {
	// Size is the outcome's size in bytes as the driver counted it
	// against Limit (body, headers and kind, plus what the statement
	// carries besides, when the limit is on a whole message).
	Size int64
	// Limit is the store's limit in bytes; 0 when the engine refused the
	// outcome without saying what its limit is.
	Limit int64
	err   error
}

// Error states the size and the limit.
func (e *OutcomeTooLargeError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("%v: %d bytes, over the store's limit of %d", ErrOutcomeTooLarge, e.Size, e.Limit)
	}
	return fmt.Sprintf("%v: %d bytes, refused by the store", ErrOutcomeTooLarge, e.Size)
}

// Unwrap returns the driver's error.
func (e *OutcomeTooLargeError) Unwrap() error { return e.err }

// Is reports whether target is ErrOutcomeTooLarge.
func (e *OutcomeTooLargeError) Is(target error) bool { return target == ErrOutcomeTooLarge }

// CommittedError is returned by Claim and Mutate for a record in flight
// that passed its commit point and whose lease ran out without an outcome
// ([ErrCommitted]). errors.Is(err, ErrCommitted) reports true for it.
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
// another request whose lease still holds. errors.Is(err, [ErrInFlight])
// reports true for it; use [errors.As] to read RetryAfter.
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

// KindError is returned by a reader of a stored outcome (Mutate's replay,
// idemhttp's, idemgrpc's) that finds an outcome of another kind than the
// one it writes: the key was first used by another entry point (a Mutate
// call and an HTTP route sharing scope and key, say). Nothing is run.
type KindError struct {
	// Kind is the stored outcome's kind ("" for none); Want the reader's.
	Kind, Want string
}

// Error names both kinds; it never contains the key or the scope.
func (e *KindError) Error() string {
	return fmt.Sprintf("stored outcome is of kind %q, not %q: the key was used by another kind of operation", e.Kind, e.Want)
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

// ErrRetryable is matched ([errors.Is]) by the errors of Claim, Mutate,
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
// another process, held the database past busy_timeout. On MySQL they are
// deadlocks (1213: InnoDB rolled the transaction back) and, with [ErrBusy],
// lock waits past innodb_lock_wait_timeout (1205). The database's own
// error stays reachable with [errors.As] (*pgconn.PgError, modernc.org/sqlite's
// *sqlite.Error, or go-sql-driver's *mysql.MySQLError). A claim that lost the race for its
// record several times running (it changed between each read and write:
// takeovers of expired records, releases, purges) matches it too.
var ErrRetryable = errors.New("ledger: retryable")

// ErrNotMigrated is matched ([errors.Is]) by the error of an operation, or
// of New on SQLite, that found no ledger table: schema.Migrate has not run
// on this database (or, on PostgreSQL, on the connection's search_path).
// It is a deployment error, not an outage: idemhttp and idemgrpc refuse
// requests then even with FailOpen, which would otherwise leave every
// request unprotected for as long as the table is missing.
var ErrNotMigrated = errors.New("ledger: not migrated")

// ErrBusy is matched ([errors.Is]), together with [ErrRetryable], by the errors
// of SQLite lock failures (SQLITE_BUSY, SQLITE_LOCKED): another connection,
// often of another process, held the database's write lock past
// busy_timeout; on PostgreSQL by lock waits past lock_timeout (55P03); and
// on MySQL by lock waits past innodb_lock_wait_timeout (1205) and a server
// out of connections (1040). The store is working but
// contended, not down: HTTP servers answer 503 with Retry-After rather than
// report an outage.
var ErrBusy = errors.New("ledger: busy")

// classify turns the driver sentinels an error is marked with (each driver
// reads its own engine's errors: see the driver package doc, Errors) into
// the ledger's: ErrNotMigrated, ErrRetryable (with ErrBusy),
// ErrOutcomeUnknown, and an *OutcomeTooLargeError. The database's error
// stays reachable with errors.As.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idriver.ErrTooLarge):
		e := &OutcomeTooLargeError{err: err}
		if tl := (*idriver.TooLargeError)(nil); errors.As(err, &tl) {
			e.Size, e.Limit = tl.Size, tl.Limit
		}
		return e
	case errors.Is(err, idriver.ErrNotMigrated):
		return &notMigratedError{err: err}
	case errors.Is(err, idriver.ErrBusy):
		return &retryableError{err: err, busy: true}
	case errors.Is(err, idriver.ErrRetryable):
		return &retryableError{err: err}
	case errors.Is(err, idriver.ErrOutcomeUnknown):
		return &unknownError{err: err}
	}
	return err
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
