// Package pgerr reads PostgreSQL's errors for the two PostgreSQL drivers
// (postgres over database/sql, pgxv5 over pgx): it marks them with the
// driver sentinels they match, so that nothing above the drivers knows a
// SQLSTATE.
package pgerr

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemledger/idemledger/driver"
)

// SQLSTATEs (PostgreSQL documentation, Appendix A).
const (
	serializationFailure = "40001" // class 40, Transaction Rollback
	deadlockDetected     = "40P01"
	lockNotAvailable     = "55P03" // class 55, Object Not In Prerequisite State: lock_timeout ran out
	undefinedTable       = "42P01" // class 42, Syntax Error or Access Rule Violation
	// The function of migration 5 (the write half of Claim) missing: a
	// database migrated by an earlier release.
	undefinedFunction  = "42883"
	connectionClass    = "08"    // class 08, Connection Exception
	adminShutdown      = "57P01" // class 57, Operator Intervention
	crashShutdown      = "57P02"
	cannotConnectNow   = "57P03"
	tooManyConnections = "53300" // class 53, Insufficient Resources: max_connections, or a role's or database's CONNECTION LIMIT
	prerequisiteState  = "55000" // class 55; while connecting: the database does not allow connections (ALLOW_CONNECTIONS false)
	// A prepared statement missing, or already there, on the session: what
	// pgx's statement cache meets behind a pooler in transaction mode.
	invalidStatementName   = "26000" // class 26, Invalid SQL Statement Name
	duplicatePreparedState = "42P05"
	// A protocol violation: among others, the server refusing a Bind whose
	// parameters do not fit the statement it names (what describe_exec's
	// Bind meets on another client's unnamed statement behind a pooler).
	protocolViolation = "08P01"
)

// bindRoutine is the server function that reports a refused Bind, as
// PostgreSQL names it in the error's routine field, which is not
// translated (the message is, per lc_messages). A pooler's own errors
// carry no routine.
const bindRoutine = "exec_bind_message"

// pooledHint is added to the errors of prepared statements that the
// session lost or already has.
const pooledHint = "prepared statements do not persist on this connection: behind a pooler in transaction mode use pgx's default_query_exec_mode=cache_describe, exec or simple_protocol (pgx's default mode needs PgBouncer 1.21 or later with max_prepared_statements; describe_exec works behind none)"

// hinted is an error with a hint after its text; it unwraps to the error.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + ": " + h.hint }
func (h hinted) Unwrap() error { return h.err }

// Interpret marks err with the driver sentinels it matches: a
// serialization failure or a deadlock is retryable (a new run of the whole
// transaction may win), a lock not granted within lock_timeout busy and
// retryable (the store is contended, not down), a missing table or
// function (migration 5's) not migrated, a connection
// exception, a server shutdown or a broken connection an unknown outcome.
// A connection the server refused for now (too many connections, or a
// database closed to new ones) is busy and retryable: nothing was sent on
// it, and a new connection a moment later may be let in. Left unmarked,
// such a refusal during a short outage ended the retries of a lease's
// commit mark and outcome at once, and the key was taken over after the
// lease while its effect had happened: a double effect (met by a newcomer
// with a role at its CONNECTION LIMIT).
// A prepared statement missing or already there (what a pooler in
// transaction mode does to pgx's statement cache), and a Bind the server
// refused (08P01 from exec_bind_message: describe_exec's Bind that reached
// another client's unnamed statement there), get a hint that says which
// query mode to use, and no mark: the server ran nothing. Any other
// protocol violation (a pooler's own errors use the code too, for a
// server connection lost mid-statement among others) is an unknown
// outcome like the rest of class 08.
// The SQLSTATE is read through pgconn.PgError's SQLState method.
func Interpret(err error) error {
	if err == nil {
		return nil
	}
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		switch code := pg.SQLState(); {
		case code == serializationFailure, code == deadlockDetected:
			return driver.Mark(err, driver.ErrRetryable)
		case code == lockNotAvailable, code == tooManyConnections:
			return driver.Mark(err, driver.ErrBusy, driver.ErrRetryable)
		case code == prerequisiteState && connecting(err):
			return driver.Mark(err, driver.ErrBusy, driver.ErrRetryable)
		case code == undefinedTable, code == undefinedFunction:
			return driver.Mark(err, driver.ErrNotMigrated)
		case code == protocolViolation && bindRefused(err):
			return hinted{err, pooledHint}
		case strings.HasPrefix(code, connectionClass), code == adminShutdown, code == crashShutdown, code == cannotConnectNow:
			return driver.Mark(err, driver.ErrOutcomeUnknown)
		case code == invalidStatementName, code == duplicatePreparedState:
			return hinted{err, pooledHint}
		}
		return err
	}
	if driver.ConnectionLost(err) {
		return driver.Mark(err, driver.ErrOutcomeUnknown)
	}
	return err
}

// bindRefused reports whether err is the server's refusal of a Bind
// message (see bindRoutine).
func bindRefused(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Routine == bindRoutine
}

// connecting reports whether err was raised while a connection was being
// made (pgconn.ConnectError), when no statement had been sent.
func connecting(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}
