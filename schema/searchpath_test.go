package schema_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

// TestPostgresSearchPathThroughPooler: a pooler refuses search_path as a
// startup parameter, and Migrate says so; the database's own default
// (ALTER DATABASE ... SET search_path) puts the tables in the schema it
// names, through the pooler, once the pooler's server connections are new.
// docs/engines.md, "Behind a pooler", rule 2.
func TestPostgresSearchPathThroughPooler(t *testing.T) {
	d := testdb.PostgresDB(t)
	if testdb.Pooling() == "" {
		t.Skip("runs through a pooler (" + testdb.PgBouncerEnv + "), where each test has a database of its own to give a default; .ci/pgbouncer sets it")
	}
	ctx := context.Background()

	asked, err := url.Parse(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	q := asked.Query()
	q.Set("search_path", "ledger_home")
	asked.RawQuery = q.Encode()
	refused, err := sql.Open("pgx", asked.String())
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	err = schema.Migrate(ctx, postgres.New(refused))
	if err == nil || !strings.Contains(err.Error(), "unsupported startup parameter: search_path") {
		t.Fatalf("Migrate with search_path in the URL = %v; want PgBouncer's refusal of the parameter", err)
	}

	// The database's default, set over the direct connection.
	var name string
	if err := d.SQL.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	direct, err := url.Parse(os.Getenv(testdb.PostgresEnv))
	if err != nil {
		t.Fatal(err)
	}
	direct.Path = "/" + name
	admin, err := sql.Open("pgx", direct.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() }) // after the cleanup below
	// The pooler's open server connections keep the search_path they
	// started with: end them, as RECONNECT on its console would.
	reconnect := func() {
		t.Helper()
		if _, err := admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // for the pooler to see them go
	}
	for _, stmt := range []string{"CREATE SCHEMA ledger_home", "ALTER DATABASE " + name + " SET search_path = ledger_home"} {
		if _, err := admin.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, stmt := range []string{"ALTER DATABASE " + name + " RESET search_path", "DROP SCHEMA ledger_home CASCADE"} {
			if _, err := admin.Exec(stmt); err != nil {
				t.Error(err)
			}
		}
		reconnect()
	})
	d.SQL.Close()
	reconnect()

	db, err := sql.Open("pgx", d.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := schema.Migrate(ctx, postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	var where string
	if err := admin.QueryRow("SELECT relnamespace::regnamespace::text FROM pg_class WHERE relname = 'idempotency_ledger' AND relnamespace <> 'public'::regnamespace").Scan(&where); err != nil || where != "ledger_home" {
		t.Fatalf("the ledger's table went to %q (%v); want ledger_home", where, err)
	}
}
