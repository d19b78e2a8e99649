package pgxv5_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/pgxv5"
)

// TestReclaimStatements: Reclaim runs the plain VACUUM throttled, on one
// connection (acquired from a pool, or the *pgx.Conn) that it gives back
// reset, and VACUUM FULL as it is.
func TestReclaimStatements(t *testing.T) {
	_, dsn := testdb.PostgresDSN(t)
	ctx := context.Background()
	trace := &testdb.Statements{}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, db := range []struct {
		name string
		db   pgxv5.DB
	}{{"pool", pool}, {"conn", conn}} {
		for _, full := range []bool{false, true} {
			d := pgxv5.New(db.db)
			if before, after, err := d.Reclaim(ctx, full); err != nil || before <= 0 || after <= 0 {
				t.Fatalf("%s: Reclaim(full %v) = %d, %d, %v; want two sizes, nil", db.name, full, before, after, err)
			}
			testdb.WantReclaim(t, trace.Take(), full)
		}
	}
}
