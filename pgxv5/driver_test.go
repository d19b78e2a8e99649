package pgxv5_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/drivertest"
	"github.com/idemledger/idemledger/internal/testdb"
)

// TestDriver runs the driver conformance suite on PostgreSQL through pgx,
// once per query mode (pgx.QueryExecMode): the statement cache, the
// describe cache, describe-exec, exec and the simple protocol (which
// poolers without prepared statements need). Its conflict is a
// serialization failure. Through a pooler in transaction mode the modes
// that cannot work there are skipped (skipUnpooled).
func TestDriver(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			skipUnpooled(t, mode)
			drivertest.Exercise(t, func(t *testing.T) *testdb.DB[pgx.Tx] {
				db, dsn := testdb.PostgresDSN(t)
				cfg, err := pgxpool.ParseConfig(dsn)
				if err != nil {
					t.Fatal(err)
				}
				cfg.ConnConfig.DefaultQueryExecMode = mode
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				return testdb.WrapPgx(pool, db, dsn)
			}, drivertest.Hooks[pgx.Tx]{Retryable: drivertest.SerializationFailure[pgx.Tx]})
		})
	}
}
