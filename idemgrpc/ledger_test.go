package idemgrpc_test

// The one file of this module's tests that calls the ledger package's
// constructors: fresh databases on every engine, and ledgers on them. A
// *ledger.Ledger[TTx] of any driver is an idemgrpc.Ledger as it is.

import (
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

var engines = testdb.Drivers()

// eachEngine runs f once per driver (testdb.Drivers), as subtests named
// after them; the PostgreSQL ones skip when testdb.PostgresEnv is unset.
func eachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

var (
	_ idemgrpc.Ledger = (*ledger.Ledger[*sql.Tx])(nil)
	_ idemgrpc.Ledger = (*ledger.Ledger[pgx.Tx])(nil)
)

// newLedger returns a ledger on a fresh, migrated database of the driver,
// with the given lease (0: the default), and the database through
// database/sql, for assertions.
func newLedger(t testing.TB, engine string, lease time.Duration) (idemgrpc.Ledger, *sql.DB) {
	t.Helper()
	l, db, _ := newStore(t, engine, ledger.Options{Lease: lease})
	return l, db
}

// newStore is newLedger with any Options, and a function that closes the
// driver's own database handle (the pgx pool on pgxv5), making the store
// unreachable.
func newStore(t testing.TB, engine string, opts ledger.Options) (l idemgrpc.Ledger, db *sql.DB, closeStore func()) {
	t.Helper()
	if d, ok := testdb.OpenSQL(t, engine); ok {
		return ledgerOn(t, d, opts), d.SQL, d.CloseDriverDB
	}
	if d, ok := testdb.OpenPgx(t, engine); ok {
		return ledgerOn(t, d, opts), d.SQL, d.CloseDriverDB
	}
	t.Fatalf("unknown driver %q", engine)
	return nil, nil, nil
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
