package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// TestNotMigrated: on a database whose ledger table is missing (schema.Migrate
// never ran), New on the drivers that prepare statements (SQLite, MySQL) and
// every operation on the others fail with an error matching ErrNotMigrated
// that says what to do, and nothing else
// (not ErrRetryable, which would be retried for ever, nor a bare driver
// error that idemhttp's FailOpen would take for an outage).
func TestNotMigrated(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { notMigrated(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { notMigrated(t, d) })
}

func notMigrated[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	if _, err := d.SQL.ExecContext(ctx, "DROP TABLE idempotency_ledger"); err != nil {
		t.Fatal(err)
	}
	check := func(op string, err error) {
		t.Helper()
		want := "ledger: " + op + ": not migrated (run schema.Migrate): "
		if op == "mutate" {
			// Mutate's claim fails as Claim's does on database/sql, or
			// with the savepoint sent beside it on pgx.
			want = "not migrated (run schema.Migrate): "
		}
		if !errors.Is(err, ledger.ErrNotMigrated) || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%s: %v; want an error matching ErrNotMigrated with %q", op, err, want)
		}
		if errors.Is(err, ledger.ErrRetryable) {
			t.Errorf("%s: %v matches ErrRetryable", op, err)
		}
	}
	l, err := ledger.New(d.Driver, ledger.Options{})
	if _, ok := d.Driver.(driver.Preparer); ok {
		// The driver prepares its statements in New, which reads the
		// schema (SQLite, MySQL).
		if l != nil {
			t.Fatalf("New = %v, %v; want an error", l, err)
		}
		check("prepare", err)
		return
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer l.Close()
	r := req("k", "payload")
	_, err = l.Claim(ctx, r)
	check("claim", err)
	_, err = l.Get(ctx, "s", "k")
	check("get", err)
	_, err = l.Stats(ctx)
	check("stats", err)
	_, err = l.Purge(ctx, ledger.PurgeOptions{})
	check("purge", err)
	tx := d.Begin(t)
	defer d.Rollback(t, tx)
	_, err = ledger.Mutate(ctx, l, tx, r, func(context.Context) (int, error) {
		t.Error("fn ran")
		return 0, nil
	})
	check("mutate", err)
}
