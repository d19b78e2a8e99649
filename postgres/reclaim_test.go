package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/postgres"
)

// TestReclaimStatements: Reclaim runs the plain VACUUM throttled, on one
// connection that it gives back reset, and VACUUM FULL as it is.
func TestReclaimStatements(t *testing.T) {
	_, dsn := testdb.PostgresDSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	trace := &testdb.Statements{}
	cfg.Tracer = trace
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	d := postgres.New(db)
	ctx := context.Background()
	for _, full := range []bool{false, true} {
		if before, after, err := d.Reclaim(ctx, full); err != nil || before <= 0 || after <= 0 {
			t.Fatalf("Reclaim(full %v) = %d, %d, %v; want two sizes, nil", full, before, after, err)
		}
		testdb.WantReclaim(t, trace.Take(), full)
	}
}
