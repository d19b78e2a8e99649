package sqlite

import (
	"errors"
	"strings"

	idriver "github.com/idemledger/idemledger/driver"
)

// SQLite's primary result codes that the ledger needs told apart
// (https://sqlite.org/rescode.html), read from modernc.org/sqlite's
// *sqlite.Error through its Code method (the extended code; the primary is
// its low byte).
const (
	sqliteError  = 1  // SQLITE_ERROR, "no such table" among others
	sqliteBusy   = 5  // SQLITE_BUSY: another connection held the lock past busy_timeout
	sqliteLocked = 6  // SQLITE_LOCKED: a conflict inside one shared-cache connection
	sqliteIOErr  = 10 // SQLITE_IOERR: the OS failed a read, write or sync
	sqliteTooBig = 18 // SQLITE_TOOBIG: a string, blob or row over SQLITE_LIMIT_LENGTH
)

// isTooBig reports whether err is SQLITE_TOOBIG.
func isTooBig(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteTooBig
}

// interpretError marks err with the driver sentinels it matches (see the
// driver package doc, Errors): a lock not granted is busy and retryable, a
// missing table not migrated, an I/O error an unknown outcome. The error
// keeps its text and stays reachable with errors.As.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch c := coded.Code() & 0xff; {
		case c == sqliteBusy || c == sqliteLocked:
			return idriver.Mark(err, idriver.ErrBusy, idriver.ErrRetryable)
		case c == sqliteError && strings.Contains(err.Error(), "no such table"):
			// SQLITE_ERROR has no extended code for this: the message is
			// all SQLite gives (https://sqlite.org/rescode.html#error).
			return idriver.Mark(err, idriver.ErrNotMigrated)
		case c == sqliteIOErr:
			return idriver.Mark(err, idriver.ErrOutcomeUnknown)
		}
		return err
	}
	if idriver.ConnectionLost(err) {
		return idriver.Mark(err, idriver.ErrOutcomeUnknown)
	}
	return err
}
