package schema_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"

	"github.com/idemledger/idemledger/schema"

	"github.com/idemledger/idemledger/sqlite"
)

// TestMigrateDirty: a database left dirty (here on purpose, as a
// migration that failed would leave it) is reported as dirty by Migrate
// and Down at once, not after waiting for a migrator that is not there.
func TestMigrateDirty(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE " + schema.MigrationsTable + " SET dirty = 1"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		f    func(context.Context, schema.Driver) error
	}{{"migrate", schema.Migrate}, {"down", schema.Down}} {
		start := time.Now()
		err := op.f(ctx, sqlite.New(db))
		elapsed := time.Since(start)
		var dirty migrate.ErrDirty
		if !errors.As(err, &dirty) || dirty.Version != int(schema.Latest) {
			t.Fatalf("%s = %v, want a migrate.ErrDirty for version %d", op.name, err, schema.Latest)
		}
		want := fmt.Sprintf("schema: %s: database dirty at version %d, left by a migration that failed or stopped part-way", op.name, schema.Latest)
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %q, want it to start with %q", op.name, err, want)
		}
		// Far below the 10 s busy timeout: nothing waited for the lock.
		if elapsed > 5*time.Second {
			t.Errorf("%s reported the dirty database after %v", op.name, elapsed)
		}
	}
	if v, dirty, err := schema.Version(ctx, sqlite.New(db)); v != schema.Latest || !dirty || err != nil {
		t.Errorf("Version = %d, %v, %v; want %d, true, nil", v, dirty, err, schema.Latest)
	}
	// Down did not drop anything.
	if got := objects(t, db); !slices.Contains(got, "table idempotency_ledger") {
		t.Errorf("objects = %q, want the ledger's table still there", got)
	}
}
