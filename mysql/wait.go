package mysql

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/idemledger/idemledger/internal/mysqldb"
)

// A lease-mode statement runs under a deadline (the ledger's, from the
// lease), and go-sql-driver answers that deadline by closing the
// connection. The server does not notice a closed connection while a
// statement waits for a row lock: it goes on waiting, up to
// innodb_lock_wait_timeout (50 s by default), and writes once the lock is
// gone, long after its caller heard that the outcome was unknown. So the
// statements that may wait for a lock, when they run on the pool (or in
// the driver's own transaction of a claim) under a deadline, carry a lock
// wait of their own, shorter than the time left: on MariaDB, SET STATEMENT
// innodb_lock_wait_timeout=N FOR; the wait then ends with 1205 (busy,
// nothing written), which the ledger retries until the deadline. The wait
// is whole seconds, 1 while at least a second and a margin are left, else
// 0 (fail at once when the row is locked), so that the few statements a
// request runs keep a few texts that stay prepared (see Prepare). MySQL
// 8.0 has no per-statement setting of innodb_lock_wait_timeout (its
// SET_VAR hint does not take it): there the statement is left to the
// session's setting, and a statement cut by the deadline is reported as an
// unknown outcome, which it is.

// waits are the statements that may wait for another transaction's row
// lock.
var waits = map[string]bool{
	mysqldb.ClaimInsert: true, mysqldb.ClaimInsertValues: true, mysqldb.GetForUpdate: true, mysqldb.GetShared: true,
	mysqldb.ClaimTakeover: true, mysqldb.Complete: true, mysqldb.CompleteReporting: true, mysqldb.Release: true,
	mysqldb.MarkCommitted: true, mysqldb.Extend: true, mysqldb.Abandon: true,
}

// lockMargin is the least time left between the server's lock wait and
// the client's deadline, for the server's answer to come back.
const lockMargin = 250 * time.Millisecond

// bounded is query with a lock wait of wait seconds (see above).
func bounded(query string, wait int) string {
	// After the first line, sqlc's "-- name:" comment, so that the
	// statement still starts with it.
	i := strings.IndexByte(query, '\n') + 1
	prefix := "SET STATEMENT innodb_lock_wait_timeout=0 FOR "
	if wait > 0 {
		prefix = "SET STATEMENT innodb_lock_wait_timeout=1 FOR "
	}
	return query[:i] + prefix + query[i:]
}

// boundedDB is the mysqldb.DBTX of an executor whose lock waits are
// bounded by ctx's deadline: each statement of waits runs as bounded's
// text when the server is MariaDB and ctx has a deadline.
type boundedDB struct {
	mysqldb.DBTX
	d *Driver
}

// text returns the query to run under ctx.
func (b boundedDB) text(ctx context.Context, query string) string {
	if !b.d.mariaDB.Load() || !waits[query] {
		return query
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return query
	}
	left := time.Until(deadline)
	if left-min(lockMargin, left/2) >= time.Second {
		return bounded(query, 1)
	}
	return bounded(query, 0)
}

func (b boundedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return b.DBTX.ExecContext(ctx, b.text(ctx, query), args...)
}

func (b boundedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return b.DBTX.QueryContext(ctx, b.text(ctx, query), args...)
}

func (b boundedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return b.DBTX.QueryRowContext(ctx, b.text(ctx, query), args...)
}
