package idemhttp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/sqlite"
)

// TestSQLiteBusyAnswer: while another connection (a long TxHandler run in
// another process, say) holds SQLite's write lock past busy_timeout, both
// forms answer 503 busy with Retry-After, reported as store_busy, not as an outage;
// once the lock is free, the same request runs. SQLite only: PostgreSQL
// has no database-wide write lock.
func TestSQLiteBusyAnswer(t *testing.T) {
	const want = `{"type":"about:blank","title":"Service Unavailable","status":503,` +
		`"detail":"the idempotency store is busy; retry later","code":"busy"}` + "\n"
	forms := []struct {
		name   string
		make   func(l *ledger.Ledger[*sql.Tx], opts Options) http.Handler
		events []ledger.Event
	}{
		{"Middleware", func(l *ledger.Ledger[*sql.Tx], opts Options) http.Handler {
			return Middleware(l, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
		}, []ledger.Event{evFail(ledger.EventStoreBusy, "claim", 503), ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201)}},
		{"TxHandler", func(l *ledger.Ledger[*sql.Tx], opts Options) http.Handler {
			return TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, _ *sql.Tx) { w.WriteHeader(201) })
		}, []ledger.Event{evFail(ledger.EventStoreBusy, "claim", 503), ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201)}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			holder, path := testdb.SQLiteFile(t, sqlite.Options{})
			impatient, err := sqlite.Options{BusyTimeout: time.Millisecond}.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer impatient.Close()
			l := newLedger(t, sqlite.New(impatient), ledger.Options{})
			obs := &recorder{}
			srv := serve(t, f.make(l, Options{
				Scope:    func(*http.Request) (string, error) { return testScope, nil },
				Observer: obs,
			}))
			hold, err := holder.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE
			if err != nil {
				t.Fatal(err)
			}
			a := send(t, srv, "POST", "/pay", `{}`, http.Header{HeaderName: {"k"}})
			if a.status != 503 || a.body != want || a.header.Get("Retry-After") != "1" {
				t.Fatalf("while the lock is held: %d %q Retry-After %q", a.status, a.body, a.header.Get("Retry-After"))
			}
			if err := hold.Rollback(); err != nil {
				t.Fatal(err)
			}
			if a := send(t, srv, "POST", "/pay", `{}`, http.Header{HeaderName: {"k"}}); a.status != 201 {
				t.Fatalf("after the lock was freed: %d %q", a.status, a.body)
			}
			obs.check(t, f.events...)
		})
	}
}

// TestClaimFrom: the handler reads the key (as the client sent it,
// decoded), the scope and the fence from its request's context, under
// either form; an unprotected request has none.
func TestClaimFrom(t *testing.T) {
	show := func(r *http.Request) string {
		c, ok := ClaimFrom(r.Context())
		if !ok {
			return "none"
		}
		return c.Scope + " " + c.Key + " " + strconv.FormatInt(c.Fence, 10)
	}
	eachEngine(t, func(t *testing.T, e string) {
		mw := setup(t, e, Options{}, ledger.Options{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, show(r))
		})
		tx := txSetup(t, e, Options{}, func(w http.ResponseWriter, r *http.Request, _ *sql.Tx) {
			io.WriteString(w, show(r))
		})
		tests := []struct {
			name string
			b    *bundle
			keys []string
			want string
		}{
			{"Middleware, quoted key", mw, []string{`"order-17;a"`}, testScope + " order-17;a 1"},
			{"Middleware, no key", mw, nil, "none"},
			{"TxHandler", tx, []string{`order-18`}, testScope + " order-18 0"},
			{"TxHandler, no key", tx, nil, "none"},
		}
		for _, tt := range tests {
			if a := tt.b.do(t, "POST", "/", `{}`, tt.keys...); a.status != 200 || a.body != tt.want {
				t.Errorf("%s: %d %q, want 200 %q", tt.name, a.status, a.body, tt.want)
			}
		}
	})
}

// TestBusyErrors: every error the ledger or a driver marks as retryable is
// contention, answered 503 busy whatever FailurePolicy says, as idemgrpc
// answers Unavailable for it; other errors are not. The SQLite codes are
// the driver's to read (sqlite.TestInterpretError): unmarked, they are
// not contention here.
func TestBusyErrors(t *testing.T) {
	coded := codeError(5) // SQLITE_BUSY from TxHandler's own BEGIN
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"retryable", fmt.Errorf("ledger: claim: %w", ledger.ErrRetryable), true},
		{"busy", fmt.Errorf("ledger: claim: %w", ledger.ErrBusy), true},
		{"driver-marked busy BEGIN", fmt.Errorf("begin: %w", driver.Mark(coded, driver.ErrBusy, driver.ErrRetryable)), true},
		{"driver-marked serialization failure", driver.Mark(errors.New("40001"), driver.ErrRetryable), true},
		{"unmarked sqlite busy code", coded, false},
		{"sqlite constraint", codeError(19), false},
		{"in flight", &ledger.InFlightError{}, false},
		{"other", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		if got := busy(tt.err); got != tt.want {
			t.Errorf("%s: busy(%v) = %t, want %t", tt.name, tt.err, got, tt.want)
		}
	}
}

// codeError is an error with a SQLite result code, as modernc.org/sqlite's
// *sqlite.Error has.
type codeError int

func (c codeError) Error() string { return fmt.Sprintf("sqlite code %d", int(c)) }
func (c codeError) Code() int     { return int(c) }

// TestPostgresLockTimeoutAnswer: with lock_timeout set on the ledger's
// connections, a claim that waits on a lock another session holds (a
// table lock here; a row lock alike) ends in 55P03, which is contention:
// 503 busy with Retry-After, reported as store_busy, never a request that
// hangs for as long as the lock lasts. PostgreSQL over database/sql (the
// pgx driver reads the same SQLSTATE through the same code).
func TestPostgresLockTimeoutAnswer(t *testing.T) {
	if os.Getenv(testdb.PgBouncerEnv) != "" {
		t.Skip("sets lock_timeout as a startup parameter, which PgBouncer refuses unless told to ignore it")
	}
	holder, dsn := testdb.PostgresDSN(t)
	impatient, err := sql.Open("pgx", dsn+"&lock_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	l := newLedger(t, postgres.New(impatient), ledger.Options{})
	obs := &recorder{}
	srv := serve(t, Middleware(l, Options{
		Scope:    func(*http.Request) (string, error) { return testScope, nil },
		Observer: obs,
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })))
	ctx := context.Background()
	hold, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.ExecContext(ctx, testdb.EngineOf(testdb.Postgres).LockLedger); err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"about:blank","title":"Service Unavailable","status":503,` +
		`"detail":"the idempotency store is busy; retry later","code":"busy"}` + "\n"
	a := send(t, srv, "POST", "/pay", `{}`, http.Header{HeaderName: {"k"}})
	if a.status != 503 || a.body != want || a.header.Get("Retry-After") != "1" {
		t.Fatalf("while the table is locked: %d %q Retry-After %q", a.status, a.body, a.header.Get("Retry-After"))
	}
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	if a := send(t, srv, "POST", "/pay", `{}`, http.Header{HeaderName: {"k"}}); a.status != 201 {
		t.Fatalf("after the lock was freed: %d %q", a.status, a.body)
	}
	obs.check(t, evFail(ledger.EventStoreBusy, "claim", 503), ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201))
}
