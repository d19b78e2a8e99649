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
	db, drv := d.SQL, d.Driver
	l, err := ledger.New(drv, ledger.Options{Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, db
}
