package schema

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
)

// Postgres returns the PostgreSQL migrations as an fs.FS rooted at their
// directory, as golang-migrate's iofs source (or another tool) reads them.
func Postgres() fs.FS {
	sub, err := fs.Sub(FS, "postgres")
	if err != nil {
		// fs.Sub fails only for an invalid path name, and "postgres" is valid.
		panic(err)
	}
	return sub
}

// MigratePostgres is Migrate for a PostgreSQL database opened with the pgx
// stdlib driver (github.com/jackc/pgx/v5/stdlib): it brings the idemledger
// tables of db up to the latest version, in the schema that is first on the
// connection's search_path (current_schema()), recording the version in
// MigrationsTable of that schema. It is a no-op when db is up to date.
//
// Replicas may run it at the same time at start-up: golang-migrate holds a
// PostgreSQL advisory lock (derived from the database, schema and table
// names) for the whole run, so one applies the migrations and the others
// wait and find nothing to do. The run uses one connection of db's pool
// and gives it back when done (it is dropped from the pool after a
// failure); db stays open. Cancellation and errors are as for Migrate;
// errors are wrapped with "schema: migrate:". With no existing schema on
// the search_path it returns ErrNoCurrentSchema and changes nothing.
func MigratePostgres(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "migrate"); err != nil {
		return err
	}
	return run(ctx, postgresTarget(db), "migrate", (*migrate.Migrate).Up)
}

// DownPostgres is Down for PostgreSQL: it rolls every idemledger migration
// in db back, dropping the ledger's table and its records, and nothing
// else. Errors are wrapped with "schema: down:".
func DownPostgres(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "down"); err != nil {
		return err
	}
	return run(ctx, postgresTarget(db), "down", (*migrate.Migrate).Down)
}

// VersionPostgres is Version for PostgreSQL: the applied migration version
// (0 when none) and whether a failed migration left db dirty. It waits for
// a MigratePostgres or DownPostgres in progress (on golang-migrate's
// advisory lock, a wait that ctx does not cut short) and reads what that
// run leaves, so a migration still running never reads as dirty. Errors
// are wrapped with "schema: version:".
func VersionPostgres(ctx context.Context, db *sql.DB) (version uint, dirty bool, err error) {
	if err := checkArgs(ctx, db, "version"); err != nil {
		return 0, false, err
	}
	return versionOf(ctx, lockedForVersion(postgresTarget(db)))
}

// lockedForVersion makes t hold golang-migrate's lock, the one Migrate and
// Down hold for their whole run, while the version is read. golang-migrate
// commits a version marked dirty before it runs a migration's SQL and
// clears the mark after, so without the lock a run in progress reads as
// one that failed half-way, and the operator is told to repair by hand.
func lockedForVersion(t target) target {
	with := t.with
	t.with = func(ctx context.Context, f func(database.Driver) error) error {
		return with(ctx, func(d database.Driver) error {
			if err := d.Lock(); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			return errors.Join(f(d), d.Unlock())
		})
	}
	return t
}

// ErrNoCurrentSchema is returned, wrapped, by MigratePostgres,
// DownPostgres and VersionPostgres when no schema on the connection's
// search_path exists, so that PostgreSQL's current_schema() is NULL and
// there is nowhere to put the ledger's table
// (https://www.postgresql.org/docs/current/ddl-schemas.html#DDL-SCHEMAS-PATH).
// Create the schema, or point search_path at one that exists.
var ErrNoCurrentSchema = errors.New("no schema on the search_path exists")

// checkCurrentSchema returns ErrNoCurrentSchema, with the search_path, when
// db's session has no current schema. golang-migrate's pgx driver would
// fail there too, with a message about scanning NULL into a string.
func checkCurrentSchema(ctx context.Context, db *sql.DB) error {
	var current sql.NullString
	var path string
	if err := db.QueryRowContext(ctx, "SELECT current_schema(), current_setting('search_path')").Scan(&current, &path); err != nil {
		return err
	}
	if !current.Valid {
		return fmt.Errorf("%w (search_path: %s)", ErrNoCurrentSchema, path)
	}
	return nil
}

// postgresTarget hands golang-migrate a private *sql.DB whose one
// connection is a connection borrowed from db. golang-migrate's pgx driver
// pins a connection for its advisory lock and releases it only in Close,
// which also closes the *sql.DB it was given: on the caller's db that
// would either leak a connection for good (never closing) or close the
// caller's pool. Closing the private one costs nothing, so the instance is
// closed and the borrowed connection goes back to db.
func postgresTarget(db *sql.DB) target {
	return target{dir: "postgres", name: "pgx5", with: func(ctx context.Context, f func(database.Driver) error) error {
		return onPinned(ctx, db, func(c driver.Conn) (bool, error) {
			private := sql.OpenDB(borrowed{conn: c, drv: db.Driver()})
			// golang-migrate queries the db twice, then pins a Conn and
			// uses nothing else: one connection is all it needs.
			private.SetMaxOpenConns(1)
			if err := checkCurrentSchema(ctx, private); err != nil {
				private.Close()
				return false, err
			}
			drv, err := migratepgx.WithInstance(private, &migratepgx.Config{MigrationsTable: MigrationsTable})
			if err != nil {
				private.Close()
				return true, fmt.Errorf("driver: %w", err)
			}
			err = errors.Join(f(drv), drv.Close()) // closes private only
			// After a failure the session may be left in any state (an
			// open transaction, a held lock): let db drop it.
			return err != nil, err
		})
	}}
}
