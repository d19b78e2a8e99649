package testdb

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/faultdb"
	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/mysql"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/sqlite"
)

// Faulty is d's database reached through a fault injector, for the tests
// that break the store mid-statement: SQLite through faultdb (Plan set),
// PostgreSQL through a faultnet proxy that cuts real connections (Proxy
// set; MySQL alike). Driver is a fresh driver of d's kind on that path; everything is
// closed when the test ends.
type Faulty[TTx any] struct {
	Driver driver.Driver[TTx]
	Plan   *faultdb.Plan
	Proxy  *faultnet.Proxy
	// Commit is what the driver's client sends to commit a transaction,
	// a marker for Proxy.Arm.
	Commit string
}

// NewFaulty returns d's database behind a fault injector. maxConns bounds
// the PostgreSQL pool (0: the driver's default).
func NewFaulty[TTx any](t testing.TB, d *DB[TTx], maxConns int) *Faulty[TTx] {
	t.Helper()
	f := &Faulty[TTx]{Commit: "commit"} // pgx's spelling
	var drv any
	if d.Name == SQLite {
		f.Plan = &faultdb.Plan{}
		db, err := faultdb.Open(d.Source, f.Plan)
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		drv = sqlite.New(db)
	} else if d.Name == MySQL {
		cfg, err := gomysql.ParseDSN(d.Source)
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		if f.Proxy, err = faultnet.Listen(cfg.Addr); err != nil {
			t.Fatalf("testdb: %v", err)
		}
		t.Cleanup(func() { f.Proxy.Close() })
		// The proxy reads PostgreSQL's framing only: a MySQL reply is
		// complete once the server fell silent.
		f.Proxy.SetSettle(50 * time.Millisecond)
		cfg.Addr = f.Proxy.Addr()
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		db.SetMaxOpenConns(maxConns)
		t.Cleanup(func() { db.Close() })
		drv = mysql.New(db)
		f.Commit = "COMMIT" // go-sql-driver/mysql's
	} else {
		u, err := url.Parse(d.Source)
		if err != nil {
			t.Fatalf("testdb: %v", err)
		}
		if f.Proxy, err = faultnet.Listen(u.Host); err != nil {
			t.Fatalf("testdb: %v", err)
		}
		t.Cleanup(func() { f.Proxy.Close() })
		u.Host = f.Proxy.Addr()
		if d.Name == Postgres {
			db, err := sql.Open("pgx", u.String())
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			db.SetMaxOpenConns(maxConns)
			t.Cleanup(func() { db.Close() })
			drv = postgres.New(db)
		} else {
			cfg, err := pgxpool.ParseConfig(u.String())
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			if maxConns > 0 {
				cfg.MaxConns = int32(maxConns)
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatalf("testdb: %v", err)
			}
			t.Cleanup(pool.Close)
			drv = pgxv5.New(pool)
		}
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
