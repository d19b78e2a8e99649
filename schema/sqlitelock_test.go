package schema_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/golang-migrate/migrate/v4"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// TestFailedMigrationUnderLock runs migrations whose second fails half-way
// through the sqlite driver's locked run: the failed migration is undone, the first
// one stays, the version is left dirty at 2 for every connection to see,
// and the connection Migrate used goes back to the pool without a
// transaction open.
func TestFailedMigrationUnderLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sqlite.Options{MaxOpenConns: 1}.Open(path) // the pinned connection is the next one used
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := sqlite.New(db)
	fsys := fstest.MapFS{
		"m/000001_a.up.sql": {Data: []byte("CREATE TABLE a (x);")},
		"m/000002_b.up.sql": {Data: []byte("CREATE TABLE b (x); INSERT INTO nowhere VALUES (1);")},
	}
	ctx := context.Background()
	up := (*migrate.Migrate).Up

	err = schema.Run(ctx, d, fsys, "migrate", up)
	if err == nil || !strings.Contains(err.Error(), "no such table: nowhere") {
		t.Fatalf("run = %v, want the failed statement's error", err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatalf("pool unusable after a failed run: %v", err)
	}
	tx.Rollback()

	// What another process sees.
	other, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var tables string
	if err := other.QueryRow("SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name)").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if want := "a " + schema.MigrationsTable; tables != want {
		t.Errorf("tables = %q, want %q (b undone)", tables, want)
	}
	if v, dirty, err := schema.Version(ctx, sqlite.New(other)); v != 2 || !dirty || err != nil {
		t.Errorf("Version = %d, %v, %v; want 2, true, nil", v, dirty, err)
	}

	err = schema.Run(ctx, d, fsys, "migrate", up)
	var de migrate.ErrDirty
	if !errors.As(err, &de) || de.Version != 2 {
		t.Errorf("second run = %v, want migrate.ErrDirty for version 2", err)
	}
}
