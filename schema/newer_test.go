package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/schema"

	"github.com/jackc/pgx/v5"
)

// TestLatest: Latest is the highest version among the migrations of each
// engine, every directory of FS.
func TestLatest(t *testing.T) {
	engines, err := fs.ReadDir(schema.FS, ".")
	if err != nil || len(engines) < 2 {
		t.Fatalf("engines in FS: %v, %v", engines, err)
	}
	for _, e := range engines {
		name := e.Name()
		fsys, err := schema.Files(name)
		if err != nil {
			t.Fatal(err)
		}
		files, err := fs.Glob(fsys, "*.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		var highest uint64
		for _, f := range files {
			v, err := strconv.ParseUint(f[:strings.IndexByte(f, '_')], 10, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, f, err)
			}
			highest = max(highest, v)
		}
		if highest != uint64(schema.Latest) {
			t.Errorf("%s: highest migration %d, Latest %d", name, highest, schema.Latest)
		}
	}
}

// TestNewerSchema: a database that a newer release migrated past Latest is
// left alone by Migrate and Down, with ErrNewerSchema; Version reads it.
func TestNewerSchema(t *testing.T) {
	testdb.Each(t, testNewerSchema[*sql.Tx], testNewerSchema[pgx.Tx])
}

func testNewerSchema[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	db := d.SQL
	newer := schema.Latest + 6
	if _, err := db.ExecContext(ctx, "UPDATE "+schema.MigrationsTable+" SET version = "+strconv.FormatUint(uint64(newer), 10)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("database schema is newer than this idemledger: the database is at version %d, this idemledger knows versions up to %d", newer, schema.Latest)
	for _, op := range []struct {
		name string
		f    func(context.Context, schema.Driver) error
	}{{"migrate", schema.Migrate}, {"down", schema.Down}} {
		err := op.f(ctx, d.Driver)
		if !errors.Is(err, schema.ErrNewerSchema) || err.Error() != "schema: "+op.name+": "+want {
			t.Errorf("%s: %v; want schema: %s: %s", op.name, err, op.name, want)
		}
	}
	if v, dirty, err := schema.Version(ctx, d.Driver); v != newer || dirty || err != nil {
		t.Errorf("version = %d, %v, %v; want %d, false, nil", v, dirty, err, newer)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM idempotency_ledger").Scan(&n); err != nil {
		t.Errorf("the ledger's table is gone: %v", err)
	}
}
