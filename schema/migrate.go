package schema

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// FS holds the raw migrations, one directory per engine, named after it
// (sqlite/, postgres/, ...): 000001_idempotency_ledger.up.sql and its
// .down.sql, and the ones that follow, in golang-migrate's file naming. A
// driver of a new engine has its directory here and nothing else to add.
//
//go:embed */*.sql
var FS embed.FS

// Latest is the newest migration version in FS, for every engine alike. A database at a higher version was migrated by a newer release of
// idemledger.
const Latest uint = 9

// ErrNewerSchema is returned, wrapped, by Migrate and Down when the database is at a version higher than any
// migration this package ships (Latest): a newer release of idemledger
// migrated it, and this one can neither bring it up to date nor roll it
// back. Nothing is changed. Use the release that migrated it.
var ErrNewerSchema = errors.New("database schema is newer than this idemledger")

// MigrationsTable is the table in which Migrate records the applied version. It is not golang-migrate's default
// (schema_migrations), so the application's own migrations keep theirs.
const MigrationsTable = "idemledger_schema_migrations"

// Files returns the migrations of one engine, the directory of FS named
// engine, as an [fs.FS] rooted there, as golang-migrate's iofs source (or
// another tool) reads them: Files("sqlite"), Files("postgres"). It returns
// an error wrapping [fs.ErrNotExist] for an engine without migrations.
func Files(engine string) (fs.FS, error) {
	if !fs.ValidPath(engine) || strings.Contains(engine, "/") || engine == "." {
		return nil, fmt.Errorf("schema: no migrations for engine %q: %w", engine, fs.ErrNotExist)
	}
	if _, err := fs.Stat(FS, engine); err != nil {
		return nil, fmt.Errorf("schema: no migrations for engine %q: %w", engine, fs.ErrNotExist)
	}
	return fs.Sub(FS, engine)
}

// Driver is what the functions of this package need of a ledger driver:
// the *Driver of every driver package of this module has it.
type Driver interface {
	Migration() Migration
	NilDB() bool
}

// Migration is a driver's side of a golang-migrate run: this package holds
// the migrations and runs them; the driver says which and over what. It
// lives here, not in package driver, so that the ledger's driver boundary
// links no migration library.
type Migration struct {
	// Engine names the driver's directory of FS (see Files).
	Engine string
	// Name is the database driver's name given to golang-migrate.
	Name string
	// With builds a golang-migrate database driver over the driver's
	// database, recording versions in table, and calls f with it. read is
	// true for a version read, false for a run that migrates (Up, Down). A
	// migrating run holds the engine's migration lock from start to end
	// (in the database driver's Lock, or around the run); a read sees only
	// what finished runs committed, never a run half-way. With owns what
	// it builds and closes it; it never closes the caller's database nor
	// asks golang-migrate to drop anything.
	With func(ctx context.Context, table string, read bool, f func(database.Driver) error) error
}

// Migrate brings the idemledger tables of d's database up to the latest
// version (see the package doc for locking, cancellation and dirty
// databases). It is a no-op when the database is up to date, and leaves it
// open and usable. Errors are wrapped with "schema: migrate:".
func Migrate(ctx context.Context, d Driver) error {
	return run(ctx, d, nil, "migrate", (*migrate.Migrate).Up)
}

// Down rolls every idemledger migration back, dropping the ledger's table
// and every record in it, and nothing else; the migrations table stays, at
// no version. It locks as Migrate does. Errors are wrapped with "schema:
// down:".
func Down(ctx context.Context, d Driver) error {
	return run(ctx, d, nil, "down", (*migrate.Migrate).Down)
}

// Version returns the migration version applied to d's database (0 when
// none is) and whether a migration failed half-way and left it dirty, in
// which case the schema needs repair by hand. It reads only what finished
// runs of Migrate and Down committed (it may wait for a run in progress).
// Like Migrate, it creates the (empty) migrations table when it
// is missing. Errors are wrapped with "schema: version:".
func Version(ctx context.Context, d Driver) (version uint, dirty bool, err error) {
	err = run(ctx, d, nil, "version", func(m *migrate.Migrate) error {
		var verr error
		version, dirty, verr = m.Version()
		if errors.Is(verr, migrate.ErrNilVersion) {
			return nil
		}
		return verr
	})
	return version, dirty, err
}

// ErrNoCurrentSchema is returned, wrapped, by Migrate, Down and Version on
// PostgreSQL (and by the PostgreSQL drivers' Executor.TableExists) when no
// schema on the connection's search_path exists, so that there is nowhere
// to put the ledger's table. Create the schema, or point
// search_path at one that exists.
var ErrNoCurrentSchema = errors.New("no schema on the search_path exists")

// run builds a golang-migrate instance for d and applies op to it. fsys
// replaces FS (tests), and then holds the migrations in a directory named
// "m".
func run(ctx context.Context, d Driver, fsys fs.FS, name string, op func(*migrate.Migrate) error) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("schema: %s: nil context", name)
	case d == nil || d.NilDB():
		return fmt.Errorf("schema: %s: nil driver or database", name)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	t := d.Migration()
	dir := "."
	if fsys == nil {
		var err error
		if fsys, err = Files(t.Engine); err != nil {
			return fmt.Errorf("schema: %s: %w", name, err)
		}
	} else {
		dir = "m"
	}
	src, err := iofs.New(fsys, dir)
	if err != nil {
		return fmt.Errorf("schema: %s: source: %w", name, err)
	}
	// The source is ours to close; the database driver is not.
	defer src.Close()

	err = t.With(ctx, MigrationsTable, name == "version", func(drv database.Driver) error {
		m, err := migrate.NewWithInstance("iofs", src, t.Name, drv)
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
