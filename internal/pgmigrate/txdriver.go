package pgmigrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4/database"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// unprepared, passed first among a statement's arguments, makes pgx send
// it as a simple query whatever the connection's default query mode (see
// txDriver).
const unprepared = pgx.QueryExecModeSimpleProtocol

// txDriver is golang-migrate's database.Driver for PostgreSQL that keeps
// nothing in the session: Lock begins a transaction and takes a
// transaction-level advisory lock (pg_advisory_xact_lock) in it, every
// migration and version mark of the run goes into that transaction, and
// Unlock commits it (or rolls it back after a failure).
//
// golang-migrate's own PostgreSQL drivers hold a session advisory lock
// (pg_advisory_lock) between statements that run outside any transaction.
// Behind a pooler in transaction mode (PgBouncer, Supabase's and Neon's
// pooled endpoints) each of those statements may go to another server
// connection: the unlock then runs where the lock is not held, the lock
// stays on the first server connection for as long as the pooler keeps it
// (PgBouncer's server_lifetime, an hour by default), and every later
// Migrate waits for it (authentik issue 23876 describes the same strand;
// golang-migrate's pgx v4 driver added a lock table for it, its pull
// request 992). A transaction, by contrast, keeps one server connection from
// BEGIN to COMMIT in every pooling mode, and its lock ends with it, also
// when the process that holds it dies: the server aborts the transaction
// when its connection goes.
//
// The lock's key is golang-migrate's (database.GenerateAdvisoryLockId over
// the database, schema and table names), so runs of earlier releases,
// which hold golang-migrate's session lock, and runs of this driver
// exclude each other. The version table has golang-migrate's layout, so
// databases migrated by either read the same.
//
// A run is therefore all or nothing on PostgreSQL: a migration that fails
// rolls back the whole run, dirty mark included, and the database stays at
// the version it had, clean. A run stopped between migrations (ctx
// cancelled) commits the migrations it applied.
//
// Every statement goes as a simple query (unprepared), whatever query mode
// the caller's connection string names: a named prepared statement, as
// pgx's default mode makes, lives on one server connection, and behind a
// pooler in transaction mode the next transaction may run on another
// (SQLSTATE 26000) or meet another client's statement of the same name
// (42P05); describe_exec's unnamed statement, prepared in one exchange and
// bound in the next, can even be another client's. Migrations are few and
// rare: a round trip more or less per statement costs nothing there.
type txDriver struct {
	// ctx bounds the wait for the lock; the statements that follow it
	// run to the end (see Lock).
	ctx   context.Context
	db    *sql.DB
	table string // quoted schema.table
	lock  int64
	tx    *sql.Tx
	// failed is set when a statement of tx failed: Unlock rolls back.
	failed bool
}

var _ database.Driver = (*txDriver)(nil)

// newTxDriver returns the driver for db's current schema, recording
// versions in table there.
func newTxDriver(ctx context.Context, db *sql.DB, table string) (*txDriver, error) {
	var dbName, schemaName string
	if err := db.QueryRowContext(ctx, "SELECT current_database(), current_schema()", unprepared).Scan(&dbName, &schemaName); err != nil {
		return nil, err
	}
	id, err := database.GenerateAdvisoryLockId(dbName, schemaName, table)
	if err != nil {
		return nil, err
	}
	// golang-migrate passes the key to the server as text; it is the
	// decimal form of a uint32, so it fits a bigint.
	lock, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, err
	}
	return &txDriver{ctx: ctx, db: db, table: quote(schemaName) + "." + quote(table), lock: lock}, nil
}

func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Open is not used: the driver is built over the caller's pool.
func (d *txDriver) Open(string) (database.Driver, error) {
	return nil, errors.New("pgmigrate: Open is not supported")
}

// Close does nothing: the pool is the caller's.
func (d *txDriver) Close() error { return nil }

// Lock begins the run's transaction and waits for the migration lock in
// it, as long as d.ctx allows. It creates the version table when it is
// missing, under the lock.
func (d *txDriver) Lock() error {
	if d.tx != nil {
		return database.ErrLocked
	}
	// The transaction outlives a cancelled ctx: once the lock is held, a
	// cancelled run stops between migrations (golang-migrate's
	// GracefulStop), never inside one, and commits what it applied.
	tx, err := d.db.BeginTx(context.WithoutCancel(d.ctx), nil)
	if err != nil {
		return err
	}
	// The wait for the lock is what ctx may cut short.
	if _, err := tx.ExecContext(d.ctx, "SELECT pg_advisory_xact_lock("+strconv.FormatInt(d.lock, 10)+")", unprepared); err != nil {
		return errors.Join(fmt.Errorf("lock: %w", err), tx.Rollback())
	}
	var exists bool
	if err := tx.QueryRowContext(d.ctx, "SELECT to_regclass('"+strings.ReplaceAll(d.table, "'", "''")+"') IS NOT NULL", unprepared).Scan(&exists); err != nil {
		return errors.Join(fmt.Errorf("lock: %w", err), tx.Rollback())
	}
	if !exists {
		if _, err := tx.ExecContext(d.ctx, "CREATE TABLE IF NOT EXISTS "+d.table+" (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)", unprepared); err != nil {
			return errors.Join(fmt.Errorf("lock: create %s: %w", d.table, err), tx.Rollback())
		}
	}
	d.tx, d.failed = tx, false
	return nil
}

// Unlock ends the run's transaction, which releases the lock: it commits
// the run, or rolls it all back when one of its statements failed.
func (d *txDriver) Unlock() error {
	if d.tx == nil {
		return database.ErrNotLocked
	}
	tx := d.tx
	d.tx = nil
	if d.failed {
		return tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Run runs one migration's SQL in the run's transaction, as a simple
// query, so a file may hold several statements.
func (d *txDriver) Run(migration io.Reader) error {
	if d.tx == nil {
		return database.ErrNotLocked
	}
	body, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(body)) == "" {
		return nil
	}
	if _, err := d.tx.ExecContext(context.WithoutCancel(d.ctx), string(body), unprepared); err != nil {
		d.failed = true
		return fmt.Errorf("migration failed: %w", err)
	}
	return nil
}

// SetVersion records version (and whether it is dirty) in the run's
// transaction, as golang-migrate's PostgreSQL driver records it: one row,
// none for database.NilVersion when clean.
func (d *txDriver) SetVersion(version int, dirty bool) error {
	if d.tx == nil {
		return database.ErrNotLocked
	}
	ctx := context.WithoutCancel(d.ctx)
	if _, err := d.tx.ExecContext(ctx, "DELETE FROM "+d.table, unprepared); err != nil {
		d.failed = true
		return err
	}
	if version >= 0 || (version == database.NilVersion && dirty) {
		stmt := fmt.Sprintf("INSERT INTO %s (version, dirty) VALUES (%d, %t)", d.table, version, dirty)
		if _, err := d.tx.ExecContext(ctx, stmt, unprepared); err != nil {
			d.failed = true
			return err
		}
	}
	return nil
}

// Version reads the recorded version: in the run's transaction when
// locked, else from what committed runs left; database.NilVersion when
// the table is missing or empty.
func (d *txDriver) Version() (version int, dirty bool, err error) {
	q := "SELECT version, dirty FROM " + d.table + " LIMIT 1"
	var row *sql.Row
	if d.tx != nil {
		row = d.tx.QueryRowContext(context.WithoutCancel(d.ctx), q, unprepared)
	} else {
		row = d.db.QueryRowContext(d.ctx, q, unprepared)
	}
	var pg *pgconn.PgError
	switch err := row.Scan(&version, &dirty); {
	case errors.Is(err, sql.ErrNoRows):
		return database.NilVersion, false, nil
	case errors.As(err, &pg) && pg.Code == undefinedTable && d.tx == nil:
		return database.NilVersion, false, nil
	case err != nil:
		if d.tx != nil {
			d.failed = true
		}
		return 0, false, err
	}
	return version, dirty, nil
}

// undefinedTable is the SQLSTATE of a missing table.
const undefinedTable = "42P01"

// Drop is refused: package schema never drops the caller's tables.
func (d *txDriver) Drop() error { return errors.New("pgmigrate: Drop is not supported") }
