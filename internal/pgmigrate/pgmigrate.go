// Package pgmigrate is golang-migrate's database driver for PostgreSQL as
// both PostgreSQL drivers (postgres, pgxv5) give it to package schema: a
// run in one transaction under a transaction-level advisory lock, so that
// it works behind poolers in transaction mode (see txDriver), over one
// connection of the caller's database/sql pool, which it never closes.
package pgmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4/database"

	"github.com/idemledger/idemledger/internal/borrow"
	"github.com/idemledger/idemledger/schema"
)

// Migration returns the driver.Migration of a PostgreSQL database reached
// through db.
func Migration(db func() *sql.DB) schema.Migration {
	return schema.Migration{Engine: "postgres", Name: "pgx5", With: func(ctx context.Context, table string, read bool, f func(database.Driver) error) error {
		if read {
			f = lockedForRead(f)
		}
		return With(ctx, db(), table, f)
	}}
}

// lockedForRead makes f hold the migration lock, the one Up and Down
// hold for their whole run, while the version is read, so that a read
// waits for a run in progress. A run of an earlier release (golang-migrate's
// own driver, same lock) commits a version marked dirty before it runs a
// migration's SQL and clears the mark after: read without the lock, such
// a run would look like one that failed half-way, and the operator would
// be told to repair by hand.
func lockedForRead(f func(database.Driver) error) func(database.Driver) error {
	return func(d database.Driver) error {
		if err := d.Lock(); err != nil {
			return err
		}
		return errors.Join(f(d), d.Unlock())
	}
}

// With hands f the migration driver of this package (txDriver) on one
// connection borrowed from db, held for the whole call: a private *[sql.DB]
// whose one connection is the borrowed one, so that nothing golang-migrate
// does can close or hold on to the caller's pool. After a failure the
// session may be left in any state (an open transaction): db then drops
// the connection instead of taking it back.
func With(ctx context.Context, db *sql.DB, table string, f func(database.Driver) error) error {
	return borrow.OnPinned(ctx, db, func(c driver.Conn) (bool, error) {
		private := sql.OpenDB(borrow.NewConnector(c, db.Driver()))
		defer private.Close() // closes private only
		private.SetMaxOpenConns(1)
		if err := checkCurrentSchema(ctx, private); err != nil {
			return false, err
		}
		// golang-migrate gives up waiting for the lock after its
		// LockTimeout (15 s) and returns ErrLockTimeout while Lock still
		// waits: cancelling lctx ends that wait before the connection is
		// dropped.
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		drv, err := newTxDriver(lctx, private, table)
		if err != nil {
			return true, fmt.Errorf("driver: %w", err)
		}
		err = f(drv)
		return err != nil, err
	})
}

// checkCurrentSchema returns driver.ErrNoCurrentSchema, with the
// search_path, when db's session has no current schema. golang-migrate's
// pgx driver would fail there too, with a message about scanning NULL into
// a string.
func checkCurrentSchema(ctx context.Context, db *sql.DB) error {
	var current sql.NullString
	var path string
	if err := db.QueryRowContext(ctx, "SELECT current_schema(), current_setting('search_path')", unprepared).Scan(&current, &path); err != nil {
		return err
	}
	if !current.Valid {
		return fmt.Errorf("%w (search_path: %s)", schema.ErrNoCurrentSchema, path)
	}
	return nil
}
