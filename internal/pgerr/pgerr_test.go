package pgerr

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/marktest"
)

// TestInterpret: each SQLSTATE the ledger must tell apart is marked with
// its sentinel, on a real *pgconn.PgError; text and cause are kept.
func TestInterpret(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	tests := []struct {
		name string
		err  error
		want []error
	}{
		{"serialization failure", pg("40001"), []error{driver.ErrRetryable}},
		{"deadlock", pg("40P01"), []error{driver.ErrRetryable}},
		{"lock timeout", pg("55P03"), []error{driver.ErrBusy, driver.ErrRetryable}},
		{"undefined table", pg("42P01"), []error{driver.ErrNotMigrated}},
		{"undefined function (migration 5 missing)", pg("42883"), []error{driver.ErrNotMigrated}},
		{"connection failure", pg("08006"), []error{driver.ErrOutcomeUnknown}},
		// A protocol violation that is not the server refusing a Bind
		// (PgBouncer sends its own errors with this code, "server conn
		// crashed?" among them): the statement may have run.
		{"protocol violation, not a refused Bind", pg("08P01"), []error{driver.ErrOutcomeUnknown}},
		{"admin shutdown", pg("57P01"), []error{driver.ErrOutcomeUnknown}},
		{"crash shutdown", pg("57P02"), []error{driver.ErrOutcomeUnknown}},
		{"cannot connect now", pg("57P03"), []error{driver.ErrOutcomeUnknown}},
		{"too many connections", pg("53300"), []error{driver.ErrBusy, driver.ErrRetryable}},
		{"object not in prerequisite state, on a connection", pg("55000"), nil},
		{"unique violation", pg("23505"), nil},
		{"query canceled", pg("57014"), nil},
		{"reply cut", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), []error{driver.ErrOutcomeUnknown}},
		{"plain", errors.New("plain"), nil},
	}
	for _, tt := range tests {
		marktest.CheckMarks(t, tt.name, tt.err, Interpret(tt.err), tt.want...)
	}
}

// TestInterpretPooledHint: the errors of pgx's statement cache behind a
// pooler in transaction mode say what to do after their text, keep their
// cause, and carry no mark; so does the server's refusal of a Bind
// (08P01, from exec_bind_message), what describe_exec meets there when
// its Bind reaches another client's unnamed statement: the server ran
// nothing, so the outcome is known.
func TestInterpretPooledHint(t *testing.T) {
	for _, tt := range []struct{ code, routine string }{
		{"26000", "exec_bind_message"}, {"42P05", "StorePreparedStatement"}, {"08P01", "exec_bind_message"},
	} {
		code := tt.code
		cause := &pgconn.PgError{Severity: "ERROR", Code: code, Message: "m", Routine: tt.routine}
		err := Interpret(fmt.Errorf("wrapped: %w", cause))
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg != cause {
			t.Errorf("%s: %v does not unwrap to its cause", code, err)
		}
		if want := "wrapped: ERROR: m (SQLSTATE " + code + "): " + pooledHint; err.Error() != want {
			t.Errorf("%s: %q, want %q", code, err, want)
		}
		for _, mark := range []error{driver.ErrRetryable, driver.ErrNotMigrated, driver.ErrOutcomeUnknown} {
			if errors.Is(err, mark) {
				t.Errorf("%s: marked %v", code, mark)
			}
		}
	}
}

// TestInterpretConnectRefused: what the server answers a new connection
// with, read from a real server: a database closed to connections is busy
// and retryable (a moment later it may open), one that does not exist is
// not marked (waiting does not make it).
func TestInterpretConnectRefused(t *testing.T) {
	base := os.Getenv("IDEMLEDGER_TEST_POSTGRES")
	if base == "" {
		t.Skip("set IDEMLEDGER_TEST_POSTGRES to run it")
	}
	if os.Getenv("IDEMLEDGER_TEST_PGBOUNCER") != "" {
		t.Skip("makes a database over the direct connection; nothing here differs behind a pooler")
	}
	ctx := context.Background()
	admin, err := pgconn.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) }) // after the database is dropped
	var b [6]byte
	rand.Read(b[:])
	name := "idemledger_closed_" + hex.EncodeToString(b[:])
	if err := admin.Exec(ctx, "CREATE DATABASE "+name+" ALLOW_CONNECTIONS false").Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.Exec(ctx, "DROP DATABASE "+name).Close(); err != nil {
			t.Error(err)
		}
	})
	for _, tt := range []struct {
		db   string
		code string
		want []error
	}{
		{name, "55000", []error{driver.ErrBusy, driver.ErrRetryable}},
		{name + "_missing", "3D000", nil},
	} {
		cfg, err := pgconn.ParseConfig(base)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Database = tt.db
		conn, err := pgconn.ConnectConfig(ctx, cfg)
		if err == nil {
			conn.Close(ctx)
			t.Fatalf("connecting to %s: no error", tt.db)
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != tt.code {
			t.Fatalf("connecting to %s: %v, want SQLSTATE %s", tt.db, err, tt.code)
		}
		marktest.CheckMarks(t, tt.code+" while connecting", err, Interpret(err), tt.want...)
	}
}
