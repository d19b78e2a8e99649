package schema_test

import (
	"context"
	"database/sql"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

// TestPostgresReplicasMigrateInEveryQueryMode: six replicas, each a pool
// of its own, migrate one database at once through both PostgreSQL
// drivers, in each of pgx's query modes, pgx's default
// (cache_statement) first. Run through PgBouncer in transaction pooling
// (.ci/pgbouncer), their statements share and swap server connections:
// a migration that prepared a named statement found it missing (26000)
// or already there (42P05) on the next, and all six replicas failed with
// nothing applied. Migrate prepares nothing, so it needs no query mode in
// the URL; every replica succeeds and the schema is at the latest version.
func TestPostgresReplicasMigrateInEveryQueryMode(t *testing.T) {
	const replicas = 6
	for _, drv := range []string{testdb.Postgres, testdb.PgxV5} {
		for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
			t.Run(drv+"/"+mode, func(t *testing.T) {
				db, dsn := testdb.PostgresDSN(t)
				ctx := context.Background()
				if err := schema.Down(ctx, postgres.New(db)); err != nil {
					t.Fatal(err)
				}
				dsn = withQueryMode(t, dsn, mode)
				var wg sync.WaitGroup
				errs := make([]error, replicas)
				for i := range errs {
					wg.Go(func() { errs[i] = migrateReplica(ctx, drv, dsn) })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("replica %d: %v", i, err)
					}
				}
				v, dirty, err := schema.Version(ctx, postgres.New(db))
				if err != nil || v != schema.Latest || dirty {
					t.Fatalf("Version = %d, %v, %v; want %d, false, nil", v, dirty, err, schema.Latest)
				}
			})
		}
	}
}

// migrateReplica migrates the database at dsn through a pool of its own,
// of the driver named drv.
func migrateReplica(ctx context.Context, drv, dsn string) error {
	if drv == testdb.PgxV5 {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return err
		}
		defer pool.Close()
		return schema.Migrate(ctx, pgxv5.New(pool))
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return schema.Migrate(ctx, postgres.New(db))
}

// withQueryMode returns the URL dsn with pgx's default_query_exec_mode set
// to mode, replacing the one it names.
func withQueryMode(t *testing.T, dsn, mode string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", mode)
	u.RawQuery = q.Encode()
	return u.String()
}
