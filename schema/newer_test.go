package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/schema"
)

// TestLatest: Latest is the highest version among the migrations of each
// engine.
func TestLatest(t *testing.T) {
	for name, fsys := range map[string]fs.FS{"sqlite": schema.SQLite(), "postgres": schema.Postgres()} {
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
	type ops struct {
		migrate, down func(context.Context, *sql.DB) error
		version       func(context.Context, *sql.DB) (uint, bool, error)
	}
	engines := map[testdb.Engine]ops{
		testdb.EngineSQLite:   {schema.Migrate, schema.Down, schema.Version},
		testdb.EnginePostgres: {schema.MigratePostgres, schema.DownPostgres, schema.VersionPostgres},
	}
	testdb.Each(t, func(t *testing.T, e testdb.Engine, db *sql.DB) {
		ctx := context.Background()
		o := engines[e]
		newer := schema.Latest + 6
		if _, err := db.ExecContext(ctx, "UPDATE "+schema.MigrationsTable+" SET version = "+strconv.FormatUint(uint64(newer), 10)); err != nil {
			t.Fatal(err)
		}
		want := "database schema is newer than this idemledger: the database is at version 7, this idemledger knows versions up to 1"
		for _, op := range []struct {
			name string
			f    func(context.Context, *sql.DB) error
		}{{"migrate", o.migrate}, {"down", o.down}} {
			err := op.f(ctx, db)
			if !errors.Is(err, schema.ErrNewerSchema) || err.Error() != "schema: "+op.name+": "+want {
				t.Errorf("%s: %v; want schema: %s: %s", op.name, err, op.name, want)
			}
		}
		if v, dirty, err := o.version(ctx, db); v != newer || dirty || err != nil {
			t.Errorf("version = %d, %v, %v; want %d, false, nil", v, dirty, err, newer)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM idempotency_ledger").Scan(&n); err != nil {
			t.Errorf("the ledger's table is gone: %v", err)
		}
	})
}
