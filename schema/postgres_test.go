package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/schema"

	"github.com/idemledger/idemledger/postgres"
)

// pgObjects lists the tables, indexes, row types and functions in the current schema
// of db, as "type name".
func pgObjects(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`
		SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'c' THEN 'type' ELSE 'index' END || ' ' || c.relname
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'c')
		UNION ALL
		SELECT 'function ' || p.proname
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = current_schema()
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresVersionDownUp runs Migrate, Down and Version on PostgreSQL
// beside an application table, on a pool of one connection: were the
// connection that golang-migrate pins for its lock not given back, the
// second call would wait forever.
func TestPostgresVersionDownUp(t *testing.T) {
	db := testdb.PostgresDB(t).SQL // already migrated
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	migrated := []string{
		"function idemledger_claim_write",
		"function idemledger_steps_end",
		"index app_orders_pkey",
		"index idemledger_ledger_created_at",
		"index idemledger_ledger_expires_at",
		"index idemledger_ledger_in_flight_key",
		"index idemledger_ledger_pkey",
		"index idemledger_ledger_released",
		"index idemledger_schema_migrations_pkey",
		"index idemledger_steps_created_at",
		"index idemledger_steps_pkey",
		"table app_orders",
		"table idemledger_schema_migrations",
		"table idempotency_ledger",
		"table idempotency_steps",
		"type idemledger_claim_won",
	}
	bare := []string{
		"index app_orders_pkey",
		"index idemledger_schema_migrations_pkey",
		"table app_orders",
		"table idemledger_schema_migrations",
	}
	if _, err := db.Exec(`CREATE TABLE app_orders (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	check := func(step string, wantVersion uint, wantObjects []string) {
		t.Helper()
		v, dirty, err := schema.Version(ctx, postgres.New(db))
		if err != nil || v != wantVersion || dirty {
			t.Fatalf("%s: VersionPostgres = %d, %v, %v; want %d, false, nil", step, v, dirty, err, wantVersion)
		}
		if got := pgObjects(t, db); !slices.Equal(got, wantObjects) {
			t.Fatalf("%s: objects = %q, want %q", step, got, wantObjects)
		}
	}
	check("fresh", schema.Latest, migrated)
	if err := schema.Migrate(ctx, postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	check("migrated twice", schema.Latest, migrated)
	for i := range 2 {
		if err := schema.Down(ctx, postgres.New(db)); err != nil {
			t.Fatalf("DownPostgres #%d: %v", i+1, err)
		}
		check("after Down", 0, bare)
	}
	if err := schema.Migrate(ctx, postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	check("after Migrate again", schema.Latest, migrated)
	if err := db.Ping(); err != nil {
		t.Fatalf("db closed by schema: %v", err)
	}
	if n := db.Stats().OpenConnections; n != 1 {
		t.Errorf("%d open connections, want 1", n)
	}
}

// TestPostgresMigrateConcurrently: replicas starting at once all migrate;
// the advisory lock lets one apply and the others find nothing to do.
func TestPostgresMigrateConcurrently(t *testing.T) {
	db := testdb.PostgresDB(t).SQL
	ctx := context.Background()
	if err := schema.Down(ctx, postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = schema.Migrate(ctx, postgres.New(db)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	if v, dirty, err := schema.Version(ctx, postgres.New(db)); v != schema.Latest || dirty || err != nil {
		t.Errorf("VersionPostgres = %d, %v, %v; want %d, false, nil", v, dirty, err, schema.Latest)
	}
}

func TestPostgresMigrateCancelled(t *testing.T) {
	db := testdb.PostgresDB(t).SQL
	ctx := context.Background()
	if err := schema.Down(ctx, postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := schema.Migrate(cctx, postgres.New(db))
	if got := fmt.Sprint(err); got != "schema: migrate: context canceled" {
		t.Fatalf("MigratePostgres = %v, want schema: migrate: context canceled", err)
	}
	if v, _, err := schema.Version(ctx, postgres.New(db)); v != 0 || err != nil {
		t.Errorf("VersionPostgres = %d, %v; want 0, nil", v, err)
	}
}

// TestPostgresNoCurrentSchema: with a search_path naming no existing
// schema, every entry point says so instead of golang-migrate's message
// about scanning NULL.
func TestPostgresNoCurrentSchema(t *testing.T) {
	testdb.PostgresDB(t) // skips without a server
	u, err := url.Parse(os.Getenv(testdb.PostgresEnv))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "idemledger_no_such_schema")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	_, _, verr := schema.Version(ctx, postgres.New(db))
	for _, c := range []struct {
		op  string
		err error
	}{
		{"migrate", schema.Migrate(ctx, postgres.New(db))},
		{"down", schema.Down(ctx, postgres.New(db))},
		{"version", verr},
	} {
		want := "schema: " + c.op + ": no schema on the search_path exists (search_path: idemledger_no_such_schema)"
		if !errors.Is(c.err, schema.ErrNoCurrentSchema) || c.err.Error() != want {
			t.Errorf("%s: %v; want %s", c.op, c.err, want)
		}
	}
}

// TestPostgresVersionDuringMigrate: golang-migrate commits the version
// marked dirty before it runs a migration's SQL and clears the mark after,
// so VersionPostgres must read under its lock: a migration in progress is
// not one that failed half-way. Readers race migrations up and down; each
// read must be clean. (Before the fix, 4 to 6 reads in these 12 rounds were
// dirty.)
func TestPostgresVersionDuringMigrate(t *testing.T) {
	db := testdb.PostgresDB(t).SQL
	ctx := context.Background()
	const rounds, readers = 12, 4
	dirty := 0
	for range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		stop := make(chan struct{})
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, d, err := schema.Version(ctx, postgres.New(db))
					if err != nil {
						t.Error(err)
						return
					}
					if d {
						mu.Lock()
						dirty++
						mu.Unlock()
					}
				}
			}()
		}
		errDown := schema.Down(ctx, postgres.New(db))
		errUp := schema.Migrate(ctx, postgres.New(db))
		close(stop)
		wg.Wait()
		if errDown != nil || errUp != nil {
			t.Fatal(errDown, errUp)
		}
	}
	if dirty > 0 {
		t.Fatalf("%d reads during %d down-and-up runs said dirty", dirty, rounds)
	}
}
