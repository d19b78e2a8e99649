package schema_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/idemledger/idemledger/schema"
)

// TestNilArguments: every entry point refuses a nil context or database
// with an error that names the operation, instead of panicking, and leaves
// the database as it was.
func TestNilArguments(t *testing.T) {
	db := open(t) // an SQLite pool; the PostgreSQL functions refuse before using it too
	var (
		nilCtx context.Context
		nilDB  *sql.DB
	)
	version := func(f func(context.Context, *sql.DB) (uint, bool, error)) func(context.Context, *sql.DB) error {
		return func(ctx context.Context, db *sql.DB) error {
			_, _, err := f(ctx, db)
			return err
		}
	}
	funcs := []struct {
		name, op string
		call     func(context.Context, *sql.DB) error
	}{
		{"Migrate", "migrate", schema.Migrate},
		{"Down", "down", schema.Down},
		{"Version", "version", version(schema.Version)},
		{"MigratePostgres", "migrate", schema.MigratePostgres},
		{"DownPostgres", "down", schema.DownPostgres},
		{"VersionPostgres", "version", version(schema.VersionPostgres)},
	}
	for _, f := range funcs {
		for _, tt := range []struct {
			name string
			ctx  context.Context
			db   *sql.DB
			want string
		}{
			{"nil context", nilCtx, db, "schema: " + f.op + ": nil context"},
			{"nil db", context.Background(), nilDB, "schema: " + f.op + ": nil *sql.DB"},
			{"both nil", nilCtx, nilDB, "schema: " + f.op + ": nil context"},
		} {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				if err := f.call(tt.ctx, tt.db); err == nil || err.Error() != tt.want {
					t.Errorf("%s with a %s = %v, want %q", f.name, tt.name, err, tt.want)
				}
			})
		}
	}
	if got := objects(t, db); len(got) != 0 {
		t.Errorf("the refused calls left %q in the database", got)
	}
}
