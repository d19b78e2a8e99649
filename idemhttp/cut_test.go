package idemhttp

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// TestCompleteCutAfterCommit is the double charge of a lost Complete, on
// every driver: the handler makes its effect and marks its commit point, then the
// connection that carries Complete's UPDATE breaks after the server ran it
// (PostgreSQL: the proxy drops the reply; SQLite: the statement reports
// SQLITE_IOERR after it ran). The client gets its 201, the record is
// completed, and a retry replays it: one effect.
func TestCompleteCutAfterCommit(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testCompleteCutAfterCommit(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testCompleteCutAfterCommit(t, d) })
}

func testCompleteCutAfterCommit[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	// One pooled connection, as in the reproduction.
	f := testdb.NewFaulty(t, d, 1)
	arm := func(body string) {
		// The body is a parameter of Complete's UPDATE alone.
		f.Proxy.Arm([]byte(body), faultnet.AfterRequest)
	}
	if f.Plan != nil {
		// The request's statements on SQLite: the claim's SELECT and
		// INSERT, the commit mark's UPDATE, Complete's UPDATE.
		arm = func(string) { f.Plan.FailAfter(4, f.IOErr) }
	}
	fired := f.Fired
	l, err := ledger.New(f.Driver, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // unprepared, so that the cutters see every statement

	var effects atomic.Int32
	h := Middleware(l, Options{Scope: func(*http.Request) (string, error) { return "tenant", nil }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			effects.Add(1)
			Commit(r.Context())
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "charged "+r.Header.Get("Idempotency-Key"))
		}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(key string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/pay", strings.NewReader(`{"amount":5}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), res.Header.Get("Idempotent-Replayed")
	}

	key := "order-" + d.Name
	arm("charged " + key)
	if status, body, _ := post(key); status != 201 || body != "charged "+key {
		t.Fatalf("first request: %d %q", status, body)
	}
	if !fired() {
		t.Fatal("the cut never fired")
	}
	clean, err := ledger.New(d.Driver, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer clean.Close()
	rec, err := clean.Get(context.Background(), "tenant", key)
	if err != nil || rec.State != ledger.StateCompleted || rec.CommittedAt.IsZero() || string(rec.Outcome.Body) != "charged "+key {
		t.Fatalf("record after the cut: %+v, %v; want completed, with its commit mark", rec, err)
	}
	if status, body, replayed := post(key); status != 201 || body != "charged "+key || replayed != "true" {
		t.Errorf("retry: %d %q replayed %q; want the stored 201 replayed", status, body, replayed)
	}
	if n := effects.Load(); n != 1 {
		t.Errorf("%d effects; want 1", n)
	}
}

// TestCommittedThenGone: a first request that marked its commit point and
// vanished (its process died: here its claim and mark are made by hand and
// never completed) is answered 410 once its lease runs out, never run
// again; with Options.Recover the handler runs again knowing when the
// earlier run committed. On every driver.
func TestCommittedThenGone(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testCommittedThenGone(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testCommittedThenGone(t, d) })
}

func testCommittedThenGone[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu atomic.Pointer[time.Time]
	mu.Store(&now)
	l, err := ledger.New(d.Driver, ledger.Options{Lease: time.Minute, Now: func() time.Time { return *mu.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	body := `{"amount":5}`
	var recovered []time.Time
	var runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		c, _ := ClaimFrom(r.Context())
		recovered = append(recovered, c.CommittedAt)
		w.WriteHeader(http.StatusCreated)
	})
	scope := func(*http.Request) (string, error) { return "tenant", nil }
	fpr := hash.Bytes([]byte(body))
	fingerprint := func(*http.Request, []byte) (hash.Digest, error) { return fpr, nil }

	var markedAt time.Time // of the recovered request's mark
	for _, recover := range []bool{false, true} {
		key := fmt.Sprintf("gone-%v", recover)
		markedAt = *mu.Load()
		// The vanished first run: claimed with the fingerprint the
		// middleware takes (Options.Fingerprint below), marked, never
		// completed.
		first, err := l.Claim(ctx, ledger.Request{Scope: "tenant", Key: key, Fingerprint: fpr})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx, first); err != nil {
			t.Fatal(err)
		}
		later := mu.Load().Add(2 * time.Minute) // the lease runs out
		mu.Store(&later)

		h := Middleware(l, Options{Scope: scope, Fingerprint: fingerprint, Recover: recover})(handler)
		req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case !recover && (rec.Code != http.StatusGone || !strings.Contains(rec.Body.String(), string(CodeOutcomeNotStored))):
			t.Errorf("retry of a committed, vanished run: %d %s; want 410 %s", rec.Code, rec.Body, CodeOutcomeNotStored)
		case recover && rec.Code != http.StatusCreated:
			t.Errorf("recovery: %d %s; want the handler's 201", rec.Code, rec.Body)
		}
	}
	if runs.Load() != 1 || len(recovered) != 1 || !recovered[0].Equal(markedAt) {
		t.Errorf("handler runs %d, recovered %v; want one run, the recovery, knowing the mark of %v", runs.Load(), recovered, markedAt)
	}
}

// TestCommitMarkFails: when the commit mark's write fails (a fault the
// ledger does not retry, here an injected error on the mark's UPDATE), an
// event store_unavailable with Op "commit" reports it and Commit writes the
// mark again (the effect is made: without the mark a crash would let a
// retry run it twice), so the handler's 503 is stored after all, and the
// retry replays it instead of running the handler again. SQLite, whose
// faults faultdb injects by statement.
func TestCommitMarkFails(t *testing.T) {
	b, plan, _ := faultSetup(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		Commit(r.Context())
		w.WriteHeader(http.StatusServiceUnavailable) // stored only because of the commit point
	}, nil)
	// The request's statements: the claim's SELECT and INSERT, then the
	// mark's UPDATE.
	plan.FailAt(3, nil)
	if a := b.do(t, "POST", "/orders", "1", "k"); a.status != http.StatusServiceUnavailable {
		t.Fatalf("first request: %+v", a)
	}
	if seen := plan.Seen(); len(seen) < 3 || !strings.Contains(seen[2], "committed_at") {
		t.Fatalf("statements %q: the third is not the mark", seen)
	}
	plan.Disarm()
	if a := b.do(t, "POST", "/orders", "1", "k"); a.status != http.StatusServiceUnavailable || a.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %+v; want the stored 503 replayed", a)
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	b.obs.check(t,
		ev(ledger.EventClaimed, "", 0),
		ledger.Event{Kind: ledger.EventStoreUnavailable, Op: "commit", Method: "POST"},
		ev(ledger.EventCommitted, "", 0),
		ev(ledger.EventStored, ledger.ReasonStatus, 503),
		ev(ledger.EventReplayed, "", 503))
	if r, err := b.l.Get(context.Background(), testScope, "k"); err != nil || r == nil || r.CommittedAt.IsZero() {
		t.Errorf("record %+v, %v; want the commit mark written by the second try", r, err)
	}
}
