package idemgrpc_test

// The one file of this module's tests that calls the ledger package's
// constructors: fresh databases on every engine, and ledgers on them. A
// *ledger.Ledger[TTx] of any driver is an idemgrpc.Ledger as it is.

import (
	"database/sql"
	"testing"
	"time"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

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
	var d *testdb.DB[*sql.Tx]
	switch engine {
	case "sqlite":
		d = testdb.SQLiteDB(t, sqlite.Options{})
	case "postgres":
		d = testdb.PostgresDB(t)
	default:
		t.Fatalf("unknown engine %q", engine)
	}
	return ledgerOn(t, d, ledger.Options{Lease: lease}), d.SQL
}

// eachDriver runs f once per driver of testdb.Drivers() (pgxv5 too, which
// eachEngine leaves out), as subtests named after them. newLedger returns
// a ledger with opts on a fresh, migrated database of that driver; the
// PostgreSQL ones skip when testdb.PostgresEnv is unset.
func eachDriver(t *testing.T, f func(t *testing.T, newLedger func(t testing.TB, opts ledger.Options) idemgrpc.Ledger)) {
	newDB := map[string]func(t testing.TB, opts ledger.Options) idemgrpc.Ledger{
		testdb.SQLite: func(t testing.TB, opts ledger.Options) idemgrpc.Ledger {
			return ledgerOn(t, testdb.SQLiteDB(t, sqlite.Options{}), opts)
		},
		testdb.Postgres: func(t testing.TB, opts ledger.Options) idemgrpc.Ledger {
			return ledgerOn(t, testdb.PostgresDB(t), opts)
		},
		testdb.PgxV5: func(t testing.TB, opts ledger.Options) idemgrpc.Ledger {
			return ledgerOn(t, testdb.PgxDB(t), opts)
		},
	}
	for _, name := range testdb.Drivers() {
		t.Run(name, func(t *testing.T) {
			if newDB[name] == nil {
				t.Fatalf("no ledger for the driver %q", name)
			}
			f(t, newDB[name])
		})
	}
}

// ledgerOn returns a ledger with opts on the database d, closed when the
// test ends.
func ledgerOn[TTx any](t testing.TB, d *testdb.DB[TTx], opts ledger.Options) *ledger.Ledger[TTx] {
	t.Helper()
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
