package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "app.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// objects lists the tables and indexes in db, as "type name".
func objects(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT type || ' ' || name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func version(t *testing.T, db *sql.DB, table string) (v int, dirty bool) {
	t.Helper()
	if err := db.QueryRow("SELECT version, dirty FROM "+table).Scan(&v, &dirty); err != nil {
		t.Fatal(err)
	}
	return v, dirty
}

func TestMigrateTwiceIsNoop(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	for i := range 2 {
		if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	want := []string{
		"index idemledger_ledger_created_at",
		"index idemledger_ledger_expires_at",
		"index idemledger_ledger_in_flight",
		"index idemledger_ledger_released",
		"index idemledger_steps_created_at",
		"index version_unique",
		"table idemledger_schema_migrations",
		"table idempotency_ledger",
		"table idempotency_steps",
		"trigger idemledger_steps_end",
	}
	if got := objects(t, db); !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
	if v, dirty := version(t, db, schema.MigrationsTable); v != int(schema.Latest) || dirty {
		t.Errorf("version = %d, dirty %v; want %d, false", v, dirty, schema.Latest)
	}
	// The pool is still open and usable after Migrate.
	if _, err := db.Exec("INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, created_at, expires_at) VALUES ('', 'k', zeroblob(32), 'completed', 1, 0, 1)"); err != nil {
		t.Fatalf("db unusable after Migrate: %v", err)
	}
}

// TestMigrateBesideApplication runs the application's own golang-migrate
// (default table schema_migrations) before and after ours, over the same
// *sql.DB, and checks that neither disturbs the other.
func TestMigrateBesideApplication(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	app := func() {
		t.Helper()
		src, err := iofs.New(appMigrations, "testdata/app")
		if err != nil {
			t.Fatal(err)
		}
		drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Up(); err != nil && err != migrate.ErrNoChange {
			t.Fatalf("app migrate: %v", err)
		}
	}
	app()
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	app()
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"index idemledger_ledger_created_at",
		"index idemledger_ledger_expires_at",
		"index idemledger_ledger_in_flight",
		"index idemledger_ledger_released",
		"index idemledger_steps_created_at",
		"index version_unique",
		"table idemledger_schema_migrations",
		"table idempotency_ledger",
		"table idempotency_steps",
		"table orders",
		"table schema_migrations",
		"trigger idemledger_steps_end",
	}
	if got := objects(t, db); !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
	if v, dirty := version(t, db, "schema_migrations"); v != 2 || dirty {
		t.Errorf("app version = %d, dirty %v; want 2, false", v, dirty)
	}
	if v, dirty := version(t, db, schema.MigrationsTable); v != int(schema.Latest) || dirty {
		t.Errorf("idemledger version = %d, dirty %v; want %d, false", v, dirty, schema.Latest)
	}
	if _, err := db.Exec("INSERT INTO orders (id, note) VALUES (1, 'x')"); err != nil {
		t.Fatalf("db unusable after Migrate: %v", err)
	}
}

func TestMigrateCancelled(t *testing.T) {
	db := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := schema.Migrate(ctx, sqlite.New(db)); err == nil || err.Error() != "schema: migrate: context canceled" {
		t.Fatalf("Migrate = %v, want schema: migrate: context canceled", err)
	}
	if got := objects(t, db); len(got) != 0 {
		t.Errorf("objects after a cancelled Migrate = %q, want none", got)
	}
}

// TestFilesRefuses: Files names an engine's directory, nothing else.
func TestFilesRefuses(t *testing.T) {
	for _, engine := range []string{"oracle", "", ".", "..", "sqlite/000001_idempotency_ledger.up.sql", "/sqlite"} {
		fsys, err := schema.Files(engine)
		want := fmt.Sprintf("schema: no migrations for engine %q: file does not exist", engine)
		if fsys != nil || !errors.Is(err, fs.ErrNotExist) || err.Error() != want {
			t.Errorf("Files(%q) = %v, %v; want %s", engine, fsys, err, want)
		}
	}
}

func TestFS(t *testing.T) {
	var got []string
	sqliteFiles, err := schema.Files("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(sqliteFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"000001_idempotency_ledger.down.sql", "000001_idempotency_ledger.up.sql",
		"000002_commit_point.down.sql", "000002_commit_point.up.sql",
		"000003_outcome_kind.down.sql", "000003_outcome_kind.up.sql",
		"000004_scale.down.sql", "000004_scale.up.sql",
		"000005_claim_write.down.sql", "000005_claim_write.up.sql",
		"000006_in_flight_key.down.sql", "000006_in_flight_key.up.sql",
		"000007_released.down.sql", "000007_released.up.sql",
		"000008_steps.down.sql", "000008_steps.up.sql",
		"000009_claim_won.down.sql", "000009_claim_won.up.sql",
	}
	if !slices.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
}

// TestDownMigration checks that the exported down migrations, run newest
// first, undo the up ones completely, for users of other tools that run
// them.
func TestDownMigration(t *testing.T) {
	db := open(t)
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	downs, err := fs.Glob(schema.FS, "sqlite/*.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Backward(downs) {
		down, err := fs.ReadFile(schema.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(down)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	want := []string{"index version_unique", "table idemledger_schema_migrations"}
	if got := objects(t, db); !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
}
