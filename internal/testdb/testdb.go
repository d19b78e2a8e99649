// Package testdb gives tests fresh, migrated databases: real engines, never
// mocks.
package testdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// SQLite returns a new SQLite database file in t.TempDir(), opened with
// sqlite.Open with its defaults (WAL, busy_timeout, immediate transactions,
// synchronous FULL) and migrated with schema.Migrate. It is closed when the
// test ends. Any failure ends the test.
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, _ := SQLiteFile(t)
	return db
}

// SQLiteFile is SQLite with options for sqlite.Open, and it also returns the
// database file's path, for tests that open the same file again (from
// another process, for example).
func SQLiteFile(t testing.TB, opts ...sqlite.Option) (db *sql.DB, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ledger.db")
	db, err := sqlite.Open(path, opts...)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(context.Background(), db); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return db, path
}
