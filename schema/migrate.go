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
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: migrate: %w", err)
	}
	src, err := iofs.New(FS, "sqlite")
	if err != nil {
		return fmt.Errorf("schema: migrate: source: %w", err)
	}
	// The source is ours to close; the database driver is not (its Close
	// closes db), so the migrate instance is simply dropped when done.
	defer src.Close()

	drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: MigrationsTable})
	if err != nil {
		return fmt.Errorf("schema: migrate: driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
	if err != nil {
		return fmt.Errorf("schema: migrate: %w", err)
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
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("schema: migrate: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schema: migrate: %w", err)
	}
	return nil
}
