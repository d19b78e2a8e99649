package sqlite

import (
	"context"

	msqlite "modernc.org/sqlite"

	idriver "github.com/idemledger/idemledger/driver"
)

// maxLength is SQLite's default SQLITE_MAX_LENGTH, which modernc.org/sqlite
// keeps: the most bytes a string, a blob or a whole row may hold
// (https://sqlite.org/limits.html). The driver refuses an outcome whose row
// would exceed it before binding a gigabyte; a connection whose limit was
// lowered (sqlite3_limit, SQLITE_LIMIT_LENGTH) refuses larger ones itself,
// with SQLITE_TOOBIG, which the driver reports the same way.
const maxLength = 1_000_000_000

// limitLength is SQLITE_LIMIT_LENGTH, sqlite3_limit's category of that
// limit.
const limitLength = 0

// rowRest is what a row holds besides the outcome and the key's columns:
// the fingerprint, the times, the fence and the state, with SQLite's
// record header, rounded up.
const rowRest = 256

// rowSize is the size of the row that would store p's outcome, as counted
// against maxLength.
func rowSize(p idriver.CompleteParams) int64 {
	return idriver.OutcomeSize(p) + int64(len(p.Scope)+len(p.Key)+len(p.Token)) + rowRest
}

// lengthLimit reads SQLITE_LIMIT_LENGTH on a connection of the pool (all
// of Open's are alike), for the error of an outcome that SQLite refused; 0
// when it cannot be read (inside a transaction the pool's connections may
// all be taken, so it does not wait for one).
func (e executor) lengthLimit(ctx context.Context) int64 {
	if e.tx != nil {
		return 0
	}
	c, err := e.d.db.Conn(ctx)
	if err != nil {
		return 0
	}
	defer c.Close()
	n, err := msqlite.Limit(c, limitLength, -1)
	if err != nil {
		return 0
	}
	return int64(n)
}
