package idemgrpc_test

// The one file of this module's tests that calls the ledger package's
// constructors: fresh databases on every engine, and ledgers on them. A
// *ledger.Ledger[TTx] of any driver is an idemgrpc.Ledger as it is.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// postgresEnv points the PostgreSQL half of the tests at a server, as in
// the main module; without it that half is skipped.
const postgresEnv = "IDEMLEDGER_TEST_POSTGRES"

var engines = []string{"sqlite", "postgres"}

// eachEngine runs f once per engine, as subtests named after them.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

var _ idemgrpc.Ledger = (*ledger.Ledger[*sql.Tx])(nil)

// newLedger returns a ledger on a fresh, migrated database of the engine,
// with the given lease (0: the default), and the database.
func newLedger(t testing.TB, engine string, lease time.Duration) (*ledger.Ledger[*sql.Tx], *sql.DB) {
	t.Helper()
	var (
		db  *sql.DB
		drv driver.Driver[*sql.Tx]
	)
	switch engine {
	case "sqlite":
		db = openSQLite(t)
		drv = sqlite.New(db)
	case "postgres":
		db = openPostgres(t)
		drv = postgres.New(db)
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	l, err := ledger.New(drv, ledger.Config{Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, db
}

// openSQLite opens a fresh SQLite file with package sqlite's defaults (WAL,
// busy_timeout, immediate transactions) and migrates it.
func openSQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	return db
}

// openPostgres opens a pool on a fresh schema of the database named by
// postgresEnv, alone on the search_path of every connection, migrates it,
// and drops it when the test ends. It skips the test when postgresEnv is
// unset.
func openPostgres(t testing.TB) *sql.DB {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set " + postgresEnv + " (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var b [8]byte
	rand.Read(b[:])
	name := "idemgrpc_test_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + name); err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() }) // before the schema is dropped
	if err := schema.Migrate(context.Background(), postgres.New(db)); err != nil {
		t.Fatal(err)
	}
	return db
}
