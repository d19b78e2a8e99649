package schema_test

import (
	"context"
	"database/sql"
	"io/fs"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

// TestOutcomeKindMigration: migration 3 (the outcome kind) on every driver.
// Its down migration gives the records that releases before it told by a
// header mark (idemgrpc's, idemhttp's answer not kept) their marks back,
// byte for byte as those releases wrote them, and leaves every other
// record as it was; migrating up again reads them as records without a
// kind, marks included, which is what their readers recognise.
func TestOutcomeKindMigration(t *testing.T) {
	testdb.Each(t, testOutcomeKindMigration[*sql.Tx], testOutcomeKindMigration[pgx.Tx])
}

func testOutcomeKindMigration[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: func() time.Time { return now }}
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]ledger.Outcome{
		"grpc":       {Kind: "grpc", Status: 5, Body: []byte("\x08\x05")},
		"not-stored": {Kind: "http.not_stored", Status: 200, Body: []byte("oversized")},
		"http":       {Kind: "http", Status: 201, Header: http.Header{"A": {"b"}}, Body: []byte("ok")},
		"value":      {Kind: ledger.KindValue, Body: []byte(`{"n":1}`)},
	}
	for key, out := range written {
		c, err := l.Claim(ctx, ledger.Request{Key: key, Fingerprint: hash.Bytes([]byte(key))})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Complete(ctx, c, out); err != nil {
			t.Fatal(err)
		}
		if rec, err := l.Get(ctx, "", key); err != nil || !reflect.DeepEqual(rec.Outcome, out) {
			t.Fatalf("%s before the down migration: %+v, %v; want %+v", key, rec.Outcome, err, out)
		}
	}
	l.Close()

	// Down to version 2 by hand: the down migrations above it, newest first.
	downByHand(t, ctx, d, 2)
	// The columns as a release of schema version 2 reads them.
	want := map[string]struct{ headers, body string }{
		"grpc":       {`{"Idemgrpc-Outcome":["1"]}`, "\x08\x05"},
		"not-stored": {`{"Idemhttp-Not-Stored":["oversized"]}`, ""},
		"http":       {`{"A":["b"]}`, "ok"},
		"value":      {"", `{"n":1}`},
	}
	for key, w := range want {
		var headers, body []byte
		err := d.SQL.QueryRowContext(ctx, testdb.Rebind(d.Engine, `SELECT headers, body FROM idempotency_ledger WHERE "key" = ?`), key).Scan(&headers, &body)
		if err != nil || string(headers) != w.headers || string(body) != w.body {
			t.Errorf("%s at version 2: headers %q, body %q, %v; want %q, %q", key, headers, body, err, w.headers, w.body)
		}
	}

	if err := schema.Migrate(ctx, d.Driver); err != nil {
		t.Fatal(err)
	}
	l, err = ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	again := map[string]ledger.Outcome{
		"grpc":       {Status: 5, Header: http.Header{"Idemgrpc-Outcome": {"1"}}, Body: []byte("\x08\x05")},
		"not-stored": {Status: 200, Header: http.Header{"Idemhttp-Not-Stored": {"oversized"}}},
		"http":       {Status: 201, Header: http.Header{"A": {"b"}}, Body: []byte("ok")},
		"value":      {Body: []byte(`{"n":1}`)},
	}
	for key, out := range again {
		if rec, err := l.Get(ctx, "", key); err != nil || !reflect.DeepEqual(rec.Outcome, out) {
			t.Errorf("%s after migrating up again: %+v, %v; want %+v", key, rec.Outcome, err, out)
		}
	}
}

// execScript runs a migration file one statement at a time, as package
// schema runs the MySQL ones: go-sql-driver/mysql takes one statement per
// call (without the DSN's multiStatements). Statements end with a semicolon
// at the end of a line.
func execScript(ctx context.Context, db *sql.DB, script []byte) error {
	// One connection for the whole script: a MySQL migration keeps a
	// statement in a session variable for PREPARE.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var stmt strings.Builder
	quoted := false // inside a dollar-quoted function body, whose lines end with semicolons of its own
	for line := range strings.Lines(string(script)) {
		stmt.WriteString(line)
		if strings.Count(line, "$idemledger$")%2 == 1 {
			quoted = !quoted
		}
		if t := strings.TrimSpace(line); !quoted && strings.HasSuffix(t, ";") && !strings.HasPrefix(t, "--") {
			if _, err := conn.ExecContext(ctx, stmt.String()); err != nil {
				return err
			}
			stmt.Reset()
		}
	}
	return nil
}

// downByHand takes d's database back to version to, as a database migrated
// by that release would be: it runs the down migrations above it, newest
// first, and records the version. It relies on FS listing the files of an
// engine in version order (their names begin with the zero-padded version).
func downByHand[TTx any](t *testing.T, ctx context.Context, d *testdb.DB[TTx], to int) {
	t.Helper()
	downs, err := fs.Glob(schema.FS, d.Engine+"/*.down.sql")
	if err != nil {
		t.Fatal(err)
	}
	for i := len(downs) - 1; i >= to; i-- {
		down, err := fs.ReadFile(schema.FS, downs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := execScript(ctx, d.SQL, down); err != nil {
			t.Fatalf("%s: %v", downs[i], err)
		}
	}
	if _, err := d.SQL.ExecContext(ctx, "UPDATE "+schema.MigrationsTable+" SET version = "+strconv.Itoa(to)); err != nil {
		t.Fatal(err)
	}
}
