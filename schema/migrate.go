package schema

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// FS holds the raw migrations, one directory per engine:
// sqlite/000001_idempotency_ledger.up.sql and its .down.sql, the same names
// under postgres/, and the ones that follow, in golang-migrate's file
// naming.
//
//go:embed sqlite/*.sql postgres/*.sql
var FS embed.FS

// MigrationsTable is the table in which Migrate (and MigratePostgres)
// records the applied version. It is not golang-migrate's default
// (schema_migrations), so the application's own migrations keep theirs.
const MigrationsTable = "idemledger_schema_migrations"

// SQLite returns the SQLite migrations as an fs.FS rooted at their
// directory, as golang-migrate's iofs source (or another tool) reads them.
func SQLite() fs.FS {
	sub, err := fs.Sub(FS, "sqlite")
	if err != nil {
		// fs.Sub fails only for an invalid path name, and "sqlite" is valid.
		panic(err)
	}
	return sub
}

// Migrate brings the idemledger tables of the SQLite database db up to the
// latest version, applying each missing migration in its own transaction.
// It is a no-op when db is already up to date. It leaves db open and usable:
// the golang-migrate instance built over db is never closed (that would
// close db) and never asked to Drop.
//
// golang-migrate's API takes no context; when ctx is cancelled Migrate
// stops between two migrations (never inside one) and returns ctx's error.
// Migrate must not run concurrently with itself in one process on the same
// db (golang-migrate's sqlite lock is per instance). Errors are wrapped with "schema: migrate:"; a database left
// dirty by a failed migration is reported as such.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "migrate"); err != nil {
		return err
	}
	return run(ctx, sqliteTarget(db), "migrate", (*migrate.Migrate).Up)
}

// Down rolls every idemledger migration in db back, dropping the ledger's
// table and every record in it; the migrations table stays, at no version.
// Only what the migrations created is dropped (golang-migrate's Drop, which
// would drop every table in the file, is never used), and db stays open.
// Errors are wrapped with "schema: down:".
func Down(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "down"); err != nil {
		return err
	}
	return run(ctx, sqliteTarget(db), "down", (*migrate.Migrate).Down)
}

// Version returns the migration version applied to db (0 when none is) and
// whether a migration failed half-way and left it dirty, in which case the
// schema needs repair by hand. Like Migrate, it creates the (empty)
// migrations table when it is missing. Errors are wrapped with
// "schema: version:".
func Version(ctx context.Context, db *sql.DB) (version uint, dirty bool, err error) {
	if err := checkArgs(ctx, db, "version"); err != nil {
		return 0, false, err
	}
	return versionOf(ctx, sqliteTarget(db))
}

func versionOf(ctx context.Context, t target) (version uint, dirty bool, err error) {
	err = run(ctx, t, "version", func(m *migrate.Migrate) error {
		var verr error
		version, dirty, verr = m.Version()
		if errors.Is(verr, migrate.ErrNilVersion) {
			return nil
		}
		return verr
	})
	return version, dirty, err
}

// target is one engine's side of a golang-migrate run: the directory of
// its migrations in FS, the driver name, and with, which builds the
// database driver over the caller's db and calls f with it. with owns
// whatever it builds; the caller's db is never closed.
type target struct {
	dir, name string
	with      func(ctx context.Context, f func(database.Driver) error) error
}

// sqliteTarget runs over db directly: golang-migrate's sqlite driver pins
// no connection, and its instance is never closed, since its Close would
// close db.
func sqliteTarget(db *sql.DB) target {
	return target{dir: "sqlite", name: "sqlite", with: func(_ context.Context, f func(database.Driver) error) error {
		drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: MigrationsTable})
		if err != nil {
			return fmt.Errorf("driver: %w", err)
		}
		return f(drv)
	}}
}

// run builds a golang-migrate instance for t and applies op to it.
func run(ctx context.Context, t target, name string, op func(*migrate.Migrate) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	src, err := iofs.New(FS, t.dir)
	if err != nil {
		return fmt.Errorf("schema: %s: source: %w", name, err)
	}
	// The source is ours to close; the database driver is not.
	defer src.Close()

	err = t.with(ctx, func(drv database.Driver) error {
		m, err := migrate.NewWithInstance("iofs", src, t.name, drv)
		if err != nil {
			return err
		}
		return apply(ctx, m, op)
	})
	if err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	return nil
}

// apply runs op on m, stopping between migrations when ctx is cancelled.
func apply(ctx context.Context, m *migrate.Migrate, op func(*migrate.Migrate) error) error {
	// A cancelled ctx asks golang-migrate to stop at the next safe point
	// between migrations.
	stop := context.AfterFunc(ctx, func() {
		select {
		case m.GracefulStop <- true:
		default:
		}
	})
	defer stop()
	if err := op(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return err
	}
	return ctx.Err()
}
