package schema_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/schema"

	"github.com/idemledger/idemledger/sqlite"

	"github.com/idemledger/idemledger/postgres"

	"github.com/idemledger/idemledger/pgxv5"
)

// TestNilArguments: every entry point refuses a nil context or database
// with an error that names the operation, instead of panicking, and leaves
// the database as it was.
func TestNilArguments(t *testing.T) {
	db := open(t)
	var (
		nilCtx    context.Context
		nilDriver schema.Driver
	)
	version := func(ctx context.Context, d schema.Driver) error {
		_, _, err := schema.Version(ctx, d)
		return err
	}
	funcs := []struct {
		name, op string
		call     func(context.Context, schema.Driver) error
	}{
		{"Migrate", "migrate", schema.Migrate},
		{"Down", "down", schema.Down},
		{"Version", "version", version},
	}
	for _, f := range funcs {
		for _, tt := range []struct {
			name string
			ctx  context.Context
			d    schema.Driver
			want string
		}{
			{"nil context", nilCtx, sqlite.New(db), "schema: " + f.op + ": nil context"},
			{"nil driver", context.Background(), nilDriver, "schema: " + f.op + ": nil driver or database"},
			{"nil sqlite db", context.Background(), sqlite.New(nil), "schema: " + f.op + ": nil driver or database"},
			{"nil postgres db", context.Background(), postgres.New(nil), "schema: " + f.op + ": nil driver or database"},
			{"nil pgx pool", context.Background(), pgxv5.New((*pgxpool.Pool)(nil)), "schema: " + f.op + ": nil driver or database"},
			{"both nil", nilCtx, nilDriver, "schema: " + f.op + ": nil context"},
		} {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				if err := f.call(tt.ctx, tt.d); err == nil || err.Error() != tt.want {
					t.Errorf("%s with a %s = %v, want %q", f.name, tt.name, err, tt.want)
				}
			})
		}
	}
	if got := objects(t, db); len(got) != 0 {
		t.Errorf("the refused calls left %q in the database", got)
	}
}
