package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// TestReplayWritesNothing: a retry of a record that stands (completed and
// unexpired, in flight under a live lease, another fingerprint) is answered
// from a plain read, which writes nothing and takes no lock: each engine's
// testdb entry checks it the engine's way (testdb.Engine.WritesNothing:
// the row's version and the transaction id on PostgreSQL, data_version
// and the write lock held elsewhere on SQLite, row locks held elsewhere
// on MySQL).
func TestReplayWritesNothing(t *testing.T) {
	eachDriver(t, testReplayWritesNothing[*sql.Tx], testReplayWritesNothing[pgx.Tx])
}

func testReplayWritesNothing[TTx any](t *testing.T, b *bundle[TTx]) {
	done := req("done", "p")
	c := b.claim(t, done)
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 201, Body: []byte(`"order 1"`)}); err != nil {
		t.Fatal(err)
	}
	b.claim(t, req("held", "p")) // in flight under a live lease

	// standing makes every answer that a read may give, once, and checks it.
	standing := func(t *testing.T) {
		t.Helper()
		if c, err := b.l.Claim(b.ctx, done); err != nil || !c.Replayed() || string(c.Replay.Outcome.Body) != `"order 1"` {
			t.Fatalf("replay: %+v, %v", c, err)
		}
		if c, err := b.l.Lookup(b.ctx, done); err != nil || !c.Replayed() || c.Replay.Outcome.Status != 201 {
			t.Fatalf("lookup: %+v, %v", c, err)
		}
		if _, err := b.l.Claim(b.ctx, req("done", "other")); !errors.Is(err, ledger.ErrKeyReused) {
			t.Fatalf("key reused: %v", err)
		}
		var inFlight *ledger.InFlightError
		if _, err := b.l.Claim(b.ctx, req("held", "p")); !errors.As(err, &inFlight) || inFlight.RetryAfter != time.Minute {
			t.Fatalf("in flight: %v", err)
		}
	}

	check := b.d.Eng.WritesNothing
	if check == nil {
		t.Fatalf("the %s engine's testdb entry has no WritesNothing check", b.d.Engine)
	}
	check(t, testdb.Quiet{SQL: b.db, Answer: standing, Mutate: func(t *testing.T, setup, query string) []testdb.Mutated {
		var runs []testdb.Mutated
		for _, r := range []ledger.Request{done, req("done", "other"), req("held", "p")} {
			tx := b.d.Begin(t)
			if setup != "" {
				if err := b.d.Exec(b.ctx, tx, setup); err != nil {
					t.Fatal(err)
				}
			}
			res, err := ledger.Mutate(b.ctx, b.l, tx, r, func(context.Context) (string, error) { return "ran", nil })
			m := testdb.Mutated{Request: fmt.Sprintf("%s, %x…", r.Key, r.Fingerprint[:2]), Ran: res.Value == "ran", Busy: errors.Is(err, ledger.ErrBusy), Err: err}
			if query != "" {
				var qerr error
				if m.Query, qerr = b.d.QueryInt(b.ctx, tx, query); qerr != nil {
					b.d.Commit(t, tx)
					t.Fatal(qerr)
				}
			}
			b.d.Commit(t, tx)
			runs = append(runs, m)
		}
		return runs
	}})
}

// TestReplayRace races replays against takeovers of expired records and
// against Purge, on the engine's clock, with records that expire within
// milliseconds. Every won claim stores its own fence as the body, so a
// replay of a row caught half-way through a takeover would show a body
// that is not its fence. A replay must never answer a record that had
// expired before the claim began (by the engine's clock, read just before
// the claim): the read comes after that instant, so such a record was
// expired at the read.
func TestReplayRace(t *testing.T) {
	eachDriverInTurn(t, testReplayRace[*sql.Tx], testReplayRace[pgx.Tx])
}

func testReplayRace[TTx any](t *testing.T, b *bundle[TTx]) {
	const (
		workers = 8
		rounds  = 120
		keys    = 6
		// Short enough that records expire under the replays, long enough
		// that a claim seldom loses five times in a row to takeovers.
		ttl = 10 * time.Millisecond
		// maxRace bounds the run when takeovers never come.
		maxRace = 20 * time.Second
	)
	l, err := ledger.New(b.d.Driver, ledger.Options{TTL: ttl, Lease: time.Minute}) // the engine's clock
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	engine := b.d.Driver.DB()
	ctx := b.ctx

	var (
		mu              sync.Mutex
		won, replays    int
		inFlight, purge int64
		gaveUp          int
		failures        []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	stop := make(chan struct{})
	var purger sync.WaitGroup
	purger.Add(1)
	go func() {
		defer purger.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := l.Purge(ctx, ledger.PurgeOptions{BatchSize: 2})
			if err != nil && !errors.Is(err, ledger.ErrRetryable) {
				fail("purge: %v", err)
				return
			}
			mu.Lock()
			purge += n
			mu.Unlock()
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// At least rounds claims each, and on until the race has
				// mixed takeovers into the replays: on a fast machine the
				// rounds can all fit inside one TTL.
				mu.Lock()
				mixed := won > 3*keys && replays > 0
				mu.Unlock()
				if i >= rounds && mixed || time.Since(start) > maxRace {
					return
				}
				r := req("race-"+strconv.Itoa((w+i)%keys), "same payload")
				before, err := engine.Now(ctx)
				if err != nil {
					fail("now: %v", err)
					return
				}
				c, err := l.Claim(ctx, r)
				var busy *ledger.InFlightError
				switch {
				case errors.As(err, &busy):
					mu.Lock()
					inFlight++
					mu.Unlock()
					continue
				case errors.Is(err, ledger.ErrRetryable) && strings.Contains(err.Error(), "the record kept changing"):
					// With a 10 ms TTL the record can expire and be
					// taken over by another goroutine between this
					// claim's read and its write five times running
					// (under -race especially): Claim gives up, which
					// is its documented limit under churn that no real
					// TTL produces, and no answer was given.
					mu.Lock()
					gaveUp++
					mu.Unlock()
					continue
				case err != nil:
					fail("claim: %v", err)
					return
				case c.Replayed():
					rec := c.Replay
					switch {
					case rec.State != ledger.StateCompleted || rec.Outcome.Status != 200:
						fail("replay of a record that is not completed: %+v", rec)
					case string(rec.Outcome.Body) != strconv.FormatInt(rec.Fence, 10):
						fail("replay of fence %d with the body of fence %s: a row caught being replaced", rec.Fence, rec.Outcome.Body)
					case rec.ExpiresAt.UnixMilli() <= before:
						fail("replay of a record expired at %d, before the claim began at %d", rec.ExpiresAt.UnixMilli(), before)
					case c.Fence != rec.Fence || c.Token != "":
						fail("replay claim %+v of record fence %d", c, rec.Fence)
					}
					mu.Lock()
					replays++
					mu.Unlock()
					continue
				}
				mu.Lock()
				won++
				mu.Unlock()
				out := ledger.Outcome{Status: 200, Body: []byte(strconv.FormatInt(c.Fence, 10))}
				if err := l.Complete(ctx, c, out); err != nil {
					fail("complete of fence %d: %v", c.Fence, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	purger.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d claims won, %d replays, %d in flight, %d purged, %d claims gave up", won, replays, inFlight, purge, gaveUp)
	if replays == 0 || won <= 3*keys {
		t.Errorf("%d replays, %d won claims: the race did not mix replays and takeovers", replays, won)
	}
}

// TestLookup: Lookup answers as Claim would for a record that stands, and
// claims nothing (nil) otherwise: no record, an expired one, an in-flight
// one whose lease ran out (same fingerprint).
func TestLookup(t *testing.T) {
	eachDriver(t, testLookup[*sql.Tx], testLookup[pgx.Tx])
}

func testLookup[TTx any](t *testing.T, b *bundle[TTx]) {
	c := b.claim(t, req("done", "p"))
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 201, Body: []byte("stored")}); err != nil {
		t.Fatal(err)
	}
	b.claim(t, req("held", "p"))
	b.clock.Advance(30 * time.Second)
	b.claim(t, req("dead", "p"))
	b.clock.Advance(50 * time.Second) // dead's lease ran out (held's has 10 s left)
	b.claim(t, req("old", "p"))
	if err := b.l.Complete(b.ctx, b.claim(t, req("old2", "p")), ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Hour + time.Minute) // old2 expired; everything else too
	c = b.claim(t, req("fresh", "p"))
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 202, Body: []byte("fresh")}); err != nil {
		t.Fatal(err)
	}
	b.claim(t, req("live", "p"))

	tests := []struct {
		name    string
		req     ledger.Request
		replay  string // the replayed body; empty for no replay
		wantErr error
	}{
		{"no record", req("none", "p"), "", nil},
		{"completed", req("fresh", "p"), "fresh", nil},
		{"key reused", req("fresh", "other"), "", ledger.ErrKeyReused},
		{"in flight", req("live", "p"), "", ledger.ErrInFlight},
		{"in flight, other fingerprint", req("live", "other"), "", ledger.ErrKeyReused},
		{"expired completed", req("old2", "p"), "", nil},
		{"expired completed, other fingerprint", req("old2", "other"), "", nil},
		{"expired in flight", req("held", "other"), "", nil},
	}
	for _, tt := range tests {
		c, err := b.l.Lookup(b.ctx, tt.req)
		switch {
		case tt.wantErr != nil:
			if !errors.Is(err, tt.wantErr) || c != nil {
				t.Errorf("%s: Lookup = %+v, %v; want %v", tt.name, c, err, tt.wantErr)
			}
		case tt.replay != "":
			if err != nil || c == nil || !c.Replayed() || string(c.Replay.Outcome.Body) != tt.replay || c.Token != "" {
				t.Errorf("%s: Lookup = %+v, %v; want a replay of %q", tt.name, c, err, tt.replay)
			}
		default:
			if err != nil || c != nil {
				t.Errorf("%s: Lookup = %+v, %v; want nil, nil", tt.name, c, err)
			}
		}
	}
	var inFlight *ledger.InFlightError
	if _, err := b.l.Lookup(b.ctx, req("live", "p")); !errors.As(err, &inFlight) || inFlight.RetryAfter != time.Minute {
		t.Errorf("in flight: %v, want RetryAfter 1m", err)
	}
	if _, err := b.l.Lookup(b.ctx, ledger.Request{Scope: "s", Key: ""}); !errors.Is(err, ledger.ErrInvalidRequest) {
		t.Errorf("empty key: %v, want ErrInvalidRequest", err)
	}
	if n := b.count(t, "idempotency_ledger"); n != 7 {
		t.Errorf("%d records after the lookups, want 7 (Lookup claims nothing)", n)
	}
}
