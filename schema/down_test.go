package schema_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemledger/idemledger/schema"

	"github.com/idemledger/idemledger/sqlite"
)

func TestVersionDownUp(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	check := func(step string, wantVersion uint, wantObjects []string) {
		t.Helper()
		v, dirty, err := schema.Version(ctx, sqlite.New(db))
		if err != nil || v != wantVersion || dirty {
			t.Fatalf("%s: Version = %d, %v, %v; want %d, false, nil", step, v, dirty, err, wantVersion)
		}
		if got := objects(t, db); !slices.Equal(got, wantObjects) {
			t.Fatalf("%s: objects = %q, want %q", step, got, wantObjects)
		}
	}
	migrated := []string{
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
	bare := []string{"index version_unique", "table idemledger_schema_migrations"}

	// An application table that Down must leave alone.
	if _, err := db.Exec(`CREATE TABLE app_orders (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	app := func(objs []string) []string {
		return slices.Sorted(slices.Values(append(slices.Clone(objs), "table app_orders")))
	}

	check("fresh", 0, app(bare))
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	check("after Migrate", schema.Latest, app(migrated))
	for i := range 2 { // a second Down has nothing to do and is no error
		if err := schema.Down(ctx, sqlite.New(db)); err != nil {
			t.Fatalf("Down #%d: %v", i+1, err)
		}
		check("after Down", 0, app(bare))
	}
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	check("after Migrate again", schema.Latest, app(migrated))
	if err := db.Ping(); err != nil {
		t.Fatalf("db closed by schema: %v", err)
	}
}
