package idemhttp

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/faultdb"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// faultClock is the ledger's clock in the fault tests, moved by hand to
// let a lease run out.
type faultClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *faultClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *faultClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// faultSetup serves h behind Middleware (or fn behind TxHandler when fn is
// not nil) on a pool that goes through faultdb, driven by the returned
// plan; b.db is a plain pool on the same file, to inspect it.
func faultSetup(t *testing.T, opts Options, h http.HandlerFunc, fn TxFunc[*sql.Tx]) (*bundle, *faultdb.Plan, *faultClock) {
	t.Helper()
	db, path := testdb.SQLiteFile(t, sqlite.Options{})
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	plan := &faultdb.Plan{}
	fdb, err := faultdb.Open(path, plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fdb.Close() })
	clk := &faultClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	b := &bundle{db: db, obs: &recorder{}}
	// The ledger runs on fdb, unprepared, so that faultdb sees (and
	// counts) every statement.
	// The faults are the database's: the ledger's cache would answer
	// replays without it.
	l, err := ledger.New(sqlite.New(fdb), ledger.Options{Lease: time.Minute, Now: clk.Now, CacheBytes: ledger.CacheOff})
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // unprepared: faultdb does not see prepared statements
	b.l = l
	opts.Scope = func(*http.Request) (string, error) { return testScope, nil }
	opts.Observer = b.obs
	var handler http.Handler
	if fn != nil {
		handler = TxHandler(l, opts, func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
			b.calls.Add(1)
			fn(w, r, tx)
		})
	} else {
		handler = Middleware(l, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b.calls.Add(1)
			h(w, r)
		}))
	}
	b.srv = httptest.NewUnstartedServer(handler)
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b, plan, clk
}

// countStatements runs one request with the plan counting and returns the
// statements it made.
func countStatements(t *testing.T, b *bundle, plan *faultdb.Plan, key string) []string {
	t.Helper()
	plan.Count()
	a := b.do(t, "POST", "/orders", "1", key)
	plan.Disarm()
	if a.status != http.StatusCreated {
		t.Fatalf("without a fault: %+v", a)
	}
	return plan.Seen()
}

// TestMiddlewareClientGoneDuringClaim: the client disconnects while the
// claim runs, and the claim's insert commits all the same (the driver then
// reports the cancellation). The handler does not run, and the retry must
// not find the key in flight for a whole lease: it runs the handler at
// once, and the next retry replays.
func TestMiddlewareClientGoneDuringClaim(t *testing.T) {
	b, plan, _ := faultSetup(t, Options{}, created, nil)
	if stmts := countStatements(t, b, plan, "probe"); len(stmts) != 3 {
		t.Fatalf("a first request made %d statements, want the claim's read and insert, and the completion: %q", len(stmts), stmts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/orders", strings.NewReader("1"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderName, "gone")
	plan.CancelAfter(2, cancel) // the insert, after the read
	b.srv.Config.Handler.ServeHTTP(httptest.NewRecorder(), req)
	plan.Disarm()
	if !plan.Fired() {
		t.Fatal("the claim was not cut short")
	}
	before := b.calls.Load()
	if r := b.record(t, "gone"); r == nil || r.State != ledger.StateInFlight {
		t.Fatalf("record after the cut claim = %+v, want the claim's row, committed", r)
	}
	if a := b.do(t, "POST", "/orders", "1", "gone"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "" || b.calls.Load() != before+1 {
		t.Fatalf("retry: %+v, %d runs; want the handler to run now", a, b.calls.Load()-before)
	}
	if r := b.record(t, "gone"); r.Fence != 2 {
		t.Errorf("fence after the retry = %d, want 2 (a takeover of the abandoned claim)", r.Fence)
	}
	if a := b.do(t, "POST", "/orders", "1", "gone"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "true" || b.calls.Load() != before+1 {
		t.Fatalf("second retry: %+v; want a replay", a)
	}
}

// TestMiddlewareFaults makes each statement of a first request, and then of
// a replay, fail once, under both failure policies. Fail closed answers 503
// and the handler does not run; fail open runs the handler unprotected and
// stores nothing. After the fault clears, a retry runs the handler (fail
// closed: for the first time) and the next retry replays. A fault at the
// completion is the lease-mode caveat: the client has its answer but the
// record stays in flight, so a retry gets 409 until the lease runs out,
// and then runs the handler again.
func TestMiddlewareFaults(t *testing.T) {
	for _, policy := range []FailurePolicy{FailClosed, FailOpen} {
		name := map[FailurePolicy]string{FailClosed: "closed", FailOpen: "open"}[policy]
		t.Run(name, func(t *testing.T) {
			b, plan, clk := faultSetup(t, Options{FailurePolicy: policy}, created, nil)
			stmts := countStatements(t, b, plan, "probe")
			if len(stmts) != 3 {
				t.Fatalf("a first request made %d statements, want the claim's read and insert, and the completion: %q", len(stmts), stmts)
			}
			for n, stage := range []string{"read", "claim", "completion"} {
				key := fmt.Sprint("first-", stage)
				before := b.calls.Load()
				b.obs.Reset()
				plan.FailAt(n+1, nil)
				a := b.do(t, "POST", "/orders", "1", key)
				plan.Disarm()
				runs := func() int64 { return b.calls.Load() - before }
				switch {
				case stage == "completion":
					// The handler ran and answered; the outcome was lost.
					if a.status != 201 || runs() != 1 || b.record(t, key).State != ledger.StateInFlight {
						t.Fatalf("fault at the completion: %d, %d runs, record %+v", a.status, runs(), b.record(t, key))
					}
					if r := b.do(t, "POST", "/orders", "1", key); r.status != 409 || r.header.Get("Retry-After") != "1" || runs() != 1 {
						t.Fatalf("retry while the lease holds: %+v, %d runs", r, runs())
					}
					clk.Advance(time.Minute)
				case policy == FailClosed:
					if a.status != 503 || !strings.Contains(a.body, `"code":"unavailable"`) || runs() != 0 || b.record(t, key) != nil {
						t.Fatalf("fail closed, fault at the claim: %+v, %d runs, record %+v", a, runs(), b.record(t, key))
					}
				default:
					if a.status != 201 || runs() != 1 || b.record(t, key) != nil {
						t.Fatalf("fail open, fault at the claim: %+v, %d runs, record %+v", a, runs(), b.record(t, key))
					}
				}
				ranBefore := runs()
				if r := b.do(t, "POST", "/orders", "1", key); r.status != 201 || r.header.Get(DefaultReplayHeader) != "" || runs() != ranBefore+1 {
					t.Fatalf("fault at the %s: retry after it cleared: %+v, %d runs", stage, r, runs())
				}
				if r := b.do(t, "POST", "/orders", "1", key); r.status != 201 || r.header.Get(DefaultReplayHeader) != "true" || runs() != ranBefore+1 {
					t.Fatalf("fault at the %s: second retry: %+v, %d runs; want a replay", stage, r, runs())
				}
				var first []ledger.Event
				switch {
				case stage == "completion":
					first = []ledger.Event{ev(ledger.EventClaimed, "", 0), evFail(ledger.EventStoreUnavailable, "complete", 201),
						ev(ledger.EventInFlight, "", 409)}
				case policy == FailClosed:
					first = []ledger.Event{evFail(ledger.EventStoreUnavailable, "claim", 503)}
				default:
					first = []ledger.Event{evFail(ledger.EventStoreUnavailable, "claim", 0)}
				}
				b.obs.check(t, append(first, ev(ledger.EventClaimed, "", 0), ev(ledger.EventStored, "", 201),
					ev(ledger.EventReplayed, "", 201))...)
				t.Logf("fault at the %s: handler ran %d times for the key", stage, runs())
			}

			// A replay: the claim's read, and nothing else. A fault there:
			// fail closed answers 503; fail open runs the handler
			// unprotected, once more.
			plan.Count()
			b.do(t, "POST", "/orders", "1", "probe")
			replayStmts := plan.Seen()
			plan.Disarm()
			if len(replayStmts) != 1 || !strings.HasPrefix(replayStmts[0], "-- name: Get ") {
				t.Fatalf("a replay made %q, want the claim's read alone", replayStmts)
			}
			for n := 1; n <= len(replayStmts); n++ {
				before := b.calls.Load()
				plan.FailAt(n, nil)
				a := b.do(t, "POST", "/orders", "1", "probe")
				plan.Disarm()
				want, wantRuns := 503, int64(0)
				if policy == FailOpen {
					want, wantRuns = 201, 1
				}
				if a.status != want || b.calls.Load()-before != wantRuns {
					t.Errorf("replay, fault at statement %d: %d, %d runs; want %d, %d runs", n, a.status, b.calls.Load()-before, want, wantRuns)
				}
				if r := b.do(t, "POST", "/orders", "1", "probe"); r.header.Get(DefaultReplayHeader) != "true" {
					t.Errorf("replay after the fault at statement %d cleared: %+v", n, r)
				}
			}
		})
	}
}

// TestTxHandlerFaults makes each statement of a first request through
// TxHandler fail once, then of a replay: the client gets 503 (or, when
// the handler's own insert fails, its 500), nothing is stored, and after
// the fault clears the retry creates exactly one order and the next one
// replays it.
func TestTxHandlerFaults(t *testing.T) {
	b, plan, _ := faultSetup(t, Options{}, nil, createOrder)
	stmts := countStatements(t, b, plan, "probe")
	for n := 1; n <= len(stmts); n++ {
		key := fmt.Sprint("first-", n)
		orders := b.orders(t)
		plan.FailAt(n, nil)
		a := b.do(t, "POST", "/orders", "1", key)
		plan.Disarm()
		stage := strings.Fields(stmts[n-1])[0]
		want := 503
		if strings.HasPrefix(stmts[n-1], "INSERT INTO orders") {
			want = 500 // createOrder's answer to its failed insert; not stored
		}
		if a.status != want || b.orders(t) != orders || b.record(t, key) != nil {
			t.Fatalf("fault at statement %d (%s): %d, %d new orders, record %+v; want %d and nothing stored",
				n, stage, a.status, b.orders(t)-orders, b.record(t, key), want)
		}
		if r := b.do(t, "POST", "/orders", "1", key); r.status != 201 || b.orders(t) != orders+1 {
			t.Fatalf("fault at statement %d: retry: %+v, %d new orders", n, r, b.orders(t)-orders)
		}
		if r := b.do(t, "POST", "/orders", "1", key); r.header.Get(DefaultReplayHeader) != "true" || b.orders(t) != orders+1 {
			t.Fatalf("fault at statement %d: second retry: %+v, %d new orders; want a replay", n, r, b.orders(t)-orders)
		}
	}
	plan.Count()
	b.do(t, "POST", "/orders", "1", "probe")
	replayStmts := plan.Seen()
	plan.Disarm()
	// On SQLite a replay is one read on the pool, before any BEGIN: it
	// never takes the write lock.
	if len(replayStmts) != 1 || !strings.HasPrefix(replayStmts[0], "-- name: Get ") {
		t.Fatalf("a replay made %q, want the lookup's read alone", replayStmts)
	}
	orders := b.orders(t)
	for n := 1; n <= len(replayStmts); n++ {
		plan.FailAt(n, nil)
		a := b.do(t, "POST", "/orders", "1", "probe")
		plan.Disarm()
		if a.status != 503 || b.orders(t) != orders {
			t.Errorf("replay, fault at statement %d: %d, %d new orders; want 503 and none", n, a.status, b.orders(t)-orders)
		}
	}
	t.Logf("%d faults in a first request, %d in a replay: no order created twice", len(stmts), len(replayStmts))
}
