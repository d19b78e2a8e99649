package schema

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// FS holds the raw migrations: sqlite/000001_idempotency_ledger.up.sql and
// its .down.sql, and the ones that follow, in golang-migrate's file naming.
//
//go:embed sqlite/*.sql
var FS embed.FS

// MigrationsTable is the table in which Migrate records the applied
// version. It is not golang-migrate's default (schema_migrations), so the
// application's own migrations keep theirs.
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
// stops between two migrations (never inside one) and returns ctx's error. Migrate must not run concurrently
// with itself in one process on the same db (golang-migrate's sqlite lock is
// per instance). Errors are wrapped with "schema: migrate:"; a database left
// dirty by a failed migration is reported as such.
func Migrate(ctx context.Context, db *sql.DB) error {
	return run(ctx, db, "migrate", (*migrate.Migrate).Up)
}

// Down rolls every idemledger migration in db back, dropping the ledger's
// table and every record in it; the migrations table stays, at no version.
// Only what the migrations created is dropped (golang-migrate's Drop, which
// would drop every table in the file, is never used), and db stays open.
// Errors are wrapped with "schema: down:".
func Down(ctx context.Context, db *sql.DB) error {
	return run(ctx, db, "down", (*migrate.Migrate).Down)
}

// Version returns the migration version applied to db (0 when none is) and
// whether a migration failed half-way and left it dirty, in which case the
// schema needs repair by hand. Like Migrate, it creates the (empty)
// migrations table when it is missing. Errors are wrapped with
// "schema: version:".
func Version(ctx context.Context, db *sql.DB) (version uint, dirty bool, err error) {
	err = run(ctx, db, "version", func(m *migrate.Migrate) error {
		var verr error
		version, dirty, verr = m.Version()
		if errors.Is(verr, migrate.ErrNilVersion) {
			return nil
		}
		return verr
	})
	return version, dirty, err
}

// run builds a golang-migrate instance over db and applies op to it. The
// instance is never closed: its Close would close db, which is the
// caller's.
func run(ctx context.Context, db *sql.DB, name string, op func(*migrate.Migrate) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	src, err := iofs.New(FS, "sqlite")
	if err != nil {
		return fmt.Errorf("schema: %s: source: %w", name, err)
	}
	// The source is ours to close; the database driver is not.
	defer src.Close()

	drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: MigrationsTable})
	if err != nil {
		return fmt.Errorf("schema: %s: driver: %w", name, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
	if err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
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
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	return nil
}
