package ledger_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/postgres"
)

// TestLeaseRidesOutRefusedConnections: while the server refuses new
// connections for a moment (the ledger's role at its CONNECTION LIMIT,
// SQLSTATE 53300, as a server at max_connections in a retry storm), a held
// lease's Commit and Complete wait until they are let in again, as they do
// through a lost connection, instead of giving up at once. Given up, the
// record stayed in flight without its mark, and a retry took the key over
// after the lease while the first run's effect had happened: a newcomer's
// payment ran twice through a two-second outage. On both PostgreSQL drivers;
// MySQL reads its "too many connections" (1040) as busy already, and SQLite
// makes no connections to a server.
func TestLeaseRidesOutRefusedConnections(t *testing.T) {
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Skip("set " + testdb.PostgresEnv + " to run it")
	}
	if testdb.Pooling() != "" {
		t.Skip("logs in as a role of its own, which the pooler's configuration does not know")
	}
	for _, name := range []string{testdb.Postgres, testdb.PgxV5} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := testdb.PostgresDSN(t)
			role, roleDSN := loginRole(t, admin, dsn)
			var l interface {
				Claim(context.Context, ledger.Request) (*ledger.Claim, error)
				Commit(context.Context, *ledger.Claim) error
				Complete(context.Context, *ledger.Claim, ledger.Outcome) error
				Get(context.Context, string, string) (*ledger.Record, error)
			}
			opts := ledger.Options{TTL: time.Hour, Lease: 10 * time.Second}
			if name == testdb.Postgres {
				db, err := sql.Open("pgx", roleDSN)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				sl, err := ledger.New(postgres.New(db), opts)
				if err != nil {
					t.Fatal(err)
				}
				l = sl
			} else {
				pool, err := pgxpool.New(ctx, roleDSN)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				pl, err := ledger.New(pgxv5.New(pool), opts)
				if err != nil {
					t.Fatal(err)
				}
				l = pl
			}
			c, err := l.Claim(ctx, req("k", "p"))
			if err != nil {
				t.Fatal(err)
			}
			// Each step meets an outage of its own: the role's connections
			// cut, new ones refused for half a second.
			for _, step := range []struct {
				name string
				run  func() error
			}{
				{"Commit", func() error { return l.Commit(ctx, c) }},
				{"Complete", func() error { return l.Complete(ctx, c, ledger.Outcome{Status: 201, Body: []byte("ch_1")}) }},
			} {
				refuse(t, admin, role, roleDSN, 500*time.Millisecond)
				if err := step.run(); err != nil {
					t.Fatalf("%s through a refusal of half a second: %v", step.name, err)
				}
			}
			r, err := l.Get(ctx, "tenant-1", "k")
			if err != nil {
				t.Fatal(err)
			}
			if r.State != ledger.StateCompleted || r.CommittedAt.IsZero() || string(r.Outcome.Body) != "ch_1" {
				t.Errorf("record = %+v, want completed with its commit mark and body ch_1", r)
			}
		})
	}
}

// loginRole makes a role that may log in and use the test's schema, and
// returns it with dsn rewritten to log in as it. The role is dropped when
// t ends, after the pools that use it are closed.
func loginRole(t *testing.T, admin *sql.DB, dsn string) (role, roleDSN string) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	role = "idemledger_role_" + hex.EncodeToString(b[:])
	var schema string
	if err := admin.QueryRow("SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT ALL ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := admin.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return role, u.String()
}

// refuse cuts role's connections and refuses new ones for d: the role's
// CONNECTION LIMIT goes to 0, then back to none after d. It checks that a
// new connection is refused with SQLSTATE 53300 meanwhile, so that the
// outage the caller meets is real.
func refuse(t *testing.T, admin *sql.DB, role, roleDSN string, d time.Duration) {
	t.Helper()
	if _, err := admin.Exec("ALTER ROLE " + role + " CONNECTION LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		t.Fatal(err)
	}
	conn, err := pgconn.Connect(context.Background(), roleDSN)
	var pg *pgconn.PgError
	if err == nil {
		conn.Close(context.Background())
	}
	if !errors.As(err, &pg) || pg.Code != "53300" {
		t.Fatalf("a new connection during the refusal: %v, want SQLSTATE 53300", err)
	}
	go func() {
		time.Sleep(d)
		if _, err := admin.Exec("ALTER ROLE " + role + " CONNECTION LIMIT -1"); err != nil {
			t.Errorf("lifting the refusal: %v", err)
		}
	}()
}
