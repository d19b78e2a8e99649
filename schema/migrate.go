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
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// FS holds the raw migrations, one directory per engine:
// sqlite/000001_idempotency_ledger.up.sql and its .down.sql, the same names
// under postgres/, and the ones that follow, in golang-migrate's file
// naming.
//
//go:embed sqlite/*.sql postgres/*.sql
var FS embed.FS

// Latest is the newest migration version in FS, for SQLite and PostgreSQL
// alike. A database at a higher version was migrated by a newer release of
// idemledger.
const Latest uint = 1

// ErrNewerSchema is returned, wrapped, by Migrate, Down and their
// PostgreSQL forms when the database is at a version higher than any
// migration this package ships (Latest): a newer release of idemledger
// migrated it, and this one can neither bring it up to date nor roll it
// back. Nothing is changed. Use the release that migrated it.
var ErrNewerSchema = errors.New("database schema is newer than this idemledger")

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
// latest version, applying each missing migration in its own savepoint. It
// is a no-op when db is already up to date. It leaves db open and usable:
// it runs on one connection of db's pool, which it gives back (or, after a
// failure that may have left a transaction open, drops), and never asks
// golang-migrate to Drop.
//
// Processes (or goroutines) that start at once may all call Migrate on the
// same file, new or not: each run holds SQLite's write lock from its first
// read of the version to its last write, so one applies the migrations
// and the others wait, then find nothing to do. Nothing a run writes is
// visible to other connections before it ends, and a process that dies
// during a run leaves the file as it was. A run waits for the lock as long
// as db's busy_timeout (10 s when db comes from sqlite.Open) and then fails
// with SQLITE_BUSY ("database is locked").
//
// golang-migrate's API takes no context; when ctx is cancelled Migrate
// stops between two migrations (never inside one), keeps the ones applied,
// and returns ctx's error. Errors are wrapped with "schema: migrate:". A
// migration that fails is undone and leaves db dirty at its version, as
// golang-migrate records it; that run, and every later one until the
// schema is repaired and the version forced by hand (migrate's force
// command), fails at once with an error that matches migrate.ErrDirty
// (errors.As) and says that the database is dirty. Since runs hold the
// lock, that error never stands for a migration still in progress.
func Migrate(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "migrate"); err != nil {
		return err
	}
	return run(ctx, lockedSQLiteTarget(db), "migrate", (*migrate.Migrate).Up)
}

// Down rolls every idemledger migration in db back, dropping the ledger's
// table and every record in it; the migrations table stays, at no version.
// Only what the migrations created is dropped (golang-migrate's Drop, which
// would drop every table in the file, is never used), and db stays open.
// Like Migrate, it holds SQLite's write lock for its whole run, so it is
// safe beside concurrent calls of Migrate and Down. Errors are wrapped with
// "schema: down:"; a dirty database is reported as by Migrate.
func Down(ctx context.Context, db *sql.DB) error {
	if err := checkArgs(ctx, db, "down"); err != nil {
		return err
	}
	return run(ctx, lockedSQLiteTarget(db), "down", (*migrate.Migrate).Down)
}

// Version returns the migration version applied to db (0 when none is) and
// whether a migration failed half-way and left it dirty, in which case the
// schema needs repair by hand. Like Migrate, it creates the (empty)
// migrations table when it is missing. It takes no lock beyond that: it
// reads what the last run of Migrate or Down committed, never a run in
// progress. Errors are wrapped with "schema: version:".
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
// its migrations in fsys (FS when nil), the driver name, and with, which
// builds the database driver over the caller's db and calls f with it.
// with owns whatever it builds; the caller's db is never closed.
type target struct {
	fsys      fs.FS
	dir, name string
	with      func(ctx context.Context, f func(database.Driver) error) error
}

// sqliteTarget runs over db directly, without lockedSQLiteTarget's lock,
// for Version: golang-migrate's sqlite driver pins no connection, and its
// instance is never closed, since its Close would close db.
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
	fsys := t.fsys
	if fsys == nil {
		fsys = FS
	}
	src, err := iofs.New(fsys, t.dir)
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
		if name != "version" {
			if err := checkNotNewer(m, src); err != nil {
				return err
			}
		}
		return apply(ctx, m, op)
	})
	if err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	return nil
}

// checkNotNewer returns ErrNewerSchema when m's database is at a version
// above the last migration of src. golang-migrate would fail there anyway,
// but with "no migration found for version N" and a file name, which says
// nothing of what happened.
func checkNotNewer(m *migrate.Migrate, src source.Driver) error {
	v, _, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return nil
	}
	if err != nil {
		return err
	}
	last, err := src.First()
	if err != nil {
		return err
	}
	for {
		next, err := src.Next(last)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		last = next
	}
	if v > last {
		return fmt.Errorf("%w: the database is at version %d, this idemledger knows versions up to %d", ErrNewerSchema, v, last)
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
		var dirty migrate.ErrDirty
		if errors.As(err, &dirty) {
			// golang-migrate's advice is right, but says neither how
			// the database got there nor that waiting will not help.
			return fmt.Errorf("database dirty at version %d, left by a migration that failed or stopped part-way (none is running: runs hold a lock): %w", dirty.Version, err)
		}
		return err
	}
	return ctx.Err()
}
