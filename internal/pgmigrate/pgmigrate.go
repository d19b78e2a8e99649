// Package pgmigrate runs golang-migrate's pgx/v5 database driver over a
// database/sql pool of PostgreSQL without ever closing that pool: the code
// both PostgreSQL drivers (postgres, pgxv5) give package schema.
package pgmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4/database"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"

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

// lockedForRead makes f hold golang-migrate's lock, the one Up and Down
// hold for their whole run, while the version is read. golang-migrate
// commits a version marked dirty before it runs a migration's SQL and
// clears the mark after, so without the lock a run in progress reads as
// one that failed half-way, and the operator is told to repair by hand.
func lockedForRead(f func(database.Driver) error) func(database.Driver) error {
	return func(d database.Driver) error {
		if err := d.Lock(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return errors.Join(f(d), d.Unlock())
	}
}

// With hands golang-migrate a private *sql.DB whose one connection is a
// connection borrowed from db. golang-migrate's pgx driver pins a
// connection for its advisory lock and releases it only in Close, which
// also closes the *sql.DB it was given: on the caller's db that would
// either leak a connection for good (never closing) or close the caller's
// pool. Closing the private one costs nothing, so the instance is closed
// and the borrowed connection goes back to db.
func With(ctx context.Context, db *sql.DB, table string, f func(database.Driver) error) error {
	return borrow.OnPinned(ctx, db, func(c driver.Conn) (bool, error) {
		private := sql.OpenDB(borrow.NewConnector(c, db.Driver()))
		// golang-migrate queries the db twice, then pins a Conn and
		// uses nothing else: one connection is all it needs.
		private.SetMaxOpenConns(1)
		if err := checkCurrentSchema(ctx, private); err != nil {
			private.Close()
			return false, err
		}
		drv, err := migratepgx.WithInstance(private, &migratepgx.Config{MigrationsTable: table})
		if err != nil {
			private.Close()
			return true, fmt.Errorf("driver: %w", err)
		}
		err = errors.Join(f(drv), drv.Close()) // closes private only
		// After a failure the session may be left in any state (an
		// open transaction, a held lock): let db drop it.
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
	if err := db.QueryRowContext(ctx, "SELECT current_schema(), current_setting('search_path')").Scan(&current, &path); err != nil {
		return err
	}
	if !current.Valid {
		return fmt.Errorf("%w (search_path: %s)", schema.ErrNoCurrentSchema, path)
	}
	return nil
}
