package testdb

import (
	"testing"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/faultdb"
	"github.com/idemledger/idemledger/internal/faultnet"
)

// Faulty is d's database reached through a fault injector, for the tests
// that break the store mid-statement, as the engine's entry chooses:
// through faultdb, which fails the statements a Plan names (Plan set; an
// engine in the test's process, SQLite), or through a faultnet proxy that
// cuts real connections (Proxy set; a server, PostgreSQL and MySQL).
// Driver is a fresh driver of d's kind on that path; everything is closed
// when the test ends.
type Faulty[TTx any] struct {
	Driver driver.Driver[TTx]
	faults
}

// faults is what an entry's faulty function sets up.
type faults struct {
	Plan  *faultdb.Plan
	Proxy *faultnet.Proxy
	// IOErr and Full, set with Plan, are the engine's errors, as its
	// driver reads them, for a storage failure after which the
	// statement's outcome is unknown (a transient one: SQLITE_IOERR) and
	// for a full storage (which is not retried: SQLITE_FULL).
	IOErr, Full error
	// Commit is what the driver's client sends to commit a transaction,
	// a marker for Proxy.Arm.
	Commit string
}

// NewFaulty returns d's database behind a fault injector. maxConns bounds
// a server's pool (0: the driver's default).
func NewFaulty[TTx any](t testing.TB, d *DB[TTx], maxConns int) *Faulty[TTx] {
	t.Helper()
	f := &Faulty[TTx]{faults: faults{Commit: "commit"}} // pgx's spelling
	var drv any
	for _, e := range sqlDrivers {
		if e.name == d.Name {
			drv = e.faulty(t, d.Source, maxConns, &f.faults)
		}
	}
	for _, e := range pgxDrivers {
		if e.name == d.Name {
			drv = e.faulty(t, d.Source, maxConns, &f.faults)
		}
	}
	if drv == nil {
		t.Fatalf("testdb: no driver %s", d.Name)
	}
	f.Driver = drv.(driver.Driver[TTx])
	return f
}

// Fired reports whether the armed fault happened.
func (f *Faulty[TTx]) Fired() bool {
	if f.Plan != nil {
		return f.Plan.Fired()
	}
	return f.Proxy.Fired()
}

// Disarm clears the armed fault.
func (f *Faulty[TTx]) Disarm() {
	if f.Plan != nil {
		f.Plan.Disarm()
		return
	}
	f.Proxy.Disarm()
}
