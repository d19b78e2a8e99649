package lifecycle_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a hand-driven ledger.Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// events records what a run reports.
type events struct {
	mu sync.Mutex
	ks []string
}

func (e *events) emit(ev ledger.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := ev.Kind.String()
	if ev.Op != "" {
		k += "/" + ev.Op
	}
	e.ks = append(e.ks, k)
}

func (e *events) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.ks
	e.ks = nil
	return ks
}

const lease = time.Minute

// eachLedger runs body on a fresh ledger of every driver, built with opts.
// On the engine's clock (opts.Now nil) the drivers run at once
// (testdb.EachAtOnce): the bodies wait on leases and budgets and share
// nothing. A fake clock is shared by every driver's ledger, so with one
// they run in turn, each advancing it alone.
func eachLedger(t *testing.T, opts ledger.Options, body func(t *testing.T, l lifecycle.Ledger)) {
	t.Helper()
	each := testdb.EachAtOnce
	if opts.Now != nil {
		each = testdb.Each
	}
	each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { body(t, newLedger(t, d, opts)) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { body(t, newLedger(t, d, opts)) })
}

func newLedger[TTx any](t *testing.T, d *testdb.DB[TTx], opts ledger.Options) *ledger.Ledger[TTx] {
	t.Helper()
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func request(key, body string) ledger.Request {
	return ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: hash.Bytes([]byte(body))}
}

var created = ledger.Outcome{Kind: "test", Status: 201, Body: []byte("paid")}

// verdict is what a test compares of a Decision.
type verdict struct {
	Verdict lifecycle.Verdict
	Why     lifecycle.Why
	Body    string
	Event   string
}

func summary(d lifecycle.Decision) verdict {
	v := verdict{Verdict: d.Verdict, Why: d.Refusal.Why, Body: string(d.Outcome.Body)}
	if d.Event.Kind != 0 {
		v.Event = d.Event.Kind.String()
	}
	return v
}

func TestDecide(t *testing.T) {
	clk := &clock{now: t0}
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: lease, Now: clk.Now}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		var ev events
		cfg := lifecycle.Config{Emit: ev.emit}
		first := lifecycle.Decide(ctx, l, request("k1", "a"), cfg)
		if first.Verdict != lifecycle.Claimed || first.Run == nil {
			t.Fatalf("first request: %+v, want Claimed with a run", summary(first))
		}
		steps := []struct {
			name string
			req  ledger.Request
			want verdict
		}{
			{"duplicate in flight", request("k1", "a"), verdict{Verdict: lifecycle.Refused, Why: lifecycle.InFlight, Event: "in_flight"}},
			{"other payload in flight", request("k1", "b"), verdict{Verdict: lifecycle.Refused, Why: lifecycle.KeyReused, Event: "key_reused"}},
			{"empty key", request("", "a"), verdict{Verdict: lifecycle.Refused, Why: lifecycle.Invalid}},
		}
		for _, s := range steps {
			if got := summary(lifecycle.Decide(ctx, l, s.req, cfg)); got != s.want {
				t.Errorf("%s: %+v, want %+v", s.name, got, s.want)
			}
		}
		first.Run.Stop()
		first.Run.Complete(created, "", 201, nil)
		if got, want := ev.take(), []string{"claimed", "stored"}; !slices.Equal(got, want) {
			t.Errorf("run's events %v, want %v", got, want)
		}
		if got, want := summary(lifecycle.Decide(ctx, l, request("k1", "a"), cfg)), (verdict{Verdict: lifecycle.Replayed, Body: "paid", Event: "replayed"}); got != want {
			t.Errorf("retry after the answer: %+v, want %+v", got, want)
		}
		if got, want := summary(lifecycle.Decide(ctx, l, request("k1", "b"), cfg)), (verdict{Verdict: lifecycle.Refused, Why: lifecycle.KeyReused, Event: "key_reused"}); got != want {
			t.Errorf("other payload after the answer: %+v, want %+v", got, want)
		}
	})
}

// TestDecideWaits: a duplicate with a Wait budget is answered by what the
// first run does while it waits: its stored answer, its release (the
// duplicate runs itself), or nothing (InFlight at the budget's end).
func TestDecideWaits(t *testing.T) {
	tests := []struct {
		name string
		end  func(r *lifecycle.Run) // what the first run does 100 ms in; nil: nothing
		want verdict
	}{
		{"first stores its answer", func(r *lifecycle.Run) { r.Complete(created, "", 201, nil) }, verdict{Verdict: lifecycle.Replayed, Body: "paid", Event: "replayed"}},
		{"first releases the key", func(r *lifecycle.Run) { r.Release(ledger.ReasonStatus, 503) }, verdict{Verdict: lifecycle.Claimed}},
		{"first still runs at the budget's end", nil, verdict{Verdict: lifecycle.Refused, Why: lifecycle.InFlight, Event: "in_flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachLedger(t, ledger.Options{TTL: time.Hour, Lease: lease}, func(t *testing.T, l lifecycle.Ledger) {
				ctx := context.Background()
				first := lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{})
				if first.Verdict != lifecycle.Claimed {
					t.Fatalf("first request: %+v", summary(first))
				}
				defer first.Run.Stop()
				if tt.end != nil {
					go func() {
						time.Sleep(100 * time.Millisecond)
						first.Run.Stop()
						tt.end(first.Run)
					}()
				}
				wait := 5 * time.Second
				if tt.end == nil {
					wait = 300 * time.Millisecond
				}
				d := lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{Wait: wait})
				if d.Run != nil {
					defer d.Run.Stop()
				}
				if got := summary(d); got != tt.want {
					t.Errorf("duplicate: %+v, want %+v", got, tt.want)
				}
			})
		})
	}
}

// TestNotStoredIsFinal: a run that passed its commit point and lost its
// lease gets a retry's NotStored only once it is fenced out: its own late
// answer is not stored, and every later retry is told NotStored again,
// never the answer.
func TestNotStoredIsFinal(t *testing.T) {
	clk := &clock{now: t0}
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: lease, Now: clk.Now}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		var ev events
		first := lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{Emit: ev.emit})
		if first.Verdict != lifecycle.Claimed {
			t.Fatalf("first request: %+v", summary(first))
		}
		first.Run.Stop()
		if !first.Run.Commit(ctx) {
			t.Fatal("Commit returned false on a live lease")
		}
		clk.Advance(2 * lease) // the first run's store went silent for two leases
		notStored := verdict{Verdict: lifecycle.Refused, Why: lifecycle.NotStored, Event: "replayed"}
		if got := summary(lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{})); got != notStored {
			t.Fatalf("retry after the lease: %+v, want %+v", got, notStored)
		}
		// The store answers again, and the first run's answer arrives.
		first.Run.Complete(created, "", 201, nil)
		if got, want := ev.take(), []string{"claimed", "committed", "lease_lost/complete"}; !slices.Equal(got, want) {
			t.Errorf("first run's events %v, want %v", got, want)
		}
		for i := range 2 {
			if got := summary(lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{})); got != notStored {
				t.Errorf("retry %d after the late answer: %+v, want %+v", i+2, got, notStored)
			}
		}
	})
}

// unreachable is a ledger whose store stops answering the lease's
// heartbeat and commit mark once cut is closed, as a silent connection or
// a lock held past the lease would; the other operations reach the real
// ledger.
type unreachable struct {
	lifecycle.Ledger
	cut chan struct{}
}

var errSilent = errors.New("test: the store does not answer")

func (u unreachable) silent() bool {
	select {
	case <-u.cut:
		return true
	default:
		return false
	}
}

func (u unreachable) Extend(ctx context.Context, c *ledger.Claim) (time.Time, error) {
	if u.silent() {
		return time.Time{}, errSilent
	}
	return u.Ledger.Extend(ctx, c)
}

func (u unreachable) Commit(ctx context.Context, c *ledger.Claim) error {
	if u.silent() {
		return errSilent
	}
	return u.Ledger.Commit(ctx, c)
}

// TestAnswerAfterLostLeaseNotStored: a handler told that its lease is lost
// (Commit returned false: no extension landed for a whole lease) answers,
// as documented, with a refusal of its own; that answer is not stored,
// and the key goes back, so a retry runs the handler.
func TestAnswerAfterLostLeaseNotStored(t *testing.T) {
	const short = 600 * time.Millisecond
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: short}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		u := unreachable{Ledger: l, cut: make(chan struct{})}
		var ev events
		first := lifecycle.Decide(ctx, u, request("k1", "a"), lifecycle.Config{Emit: ev.emit})
		if first.Verdict != lifecycle.Claimed {
			t.Fatalf("first request: %+v", summary(first))
		}
		hctx := first.Run.Context(ctx)
		close(u.cut)
		select {
		case <-hctx.Done():
		case <-time.After(10 * short):
			t.Fatal("the handler's context was not cancelled when the lease ran out unextended")
		}
		if !errors.Is(context.Cause(hctx), ledger.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", context.Cause(hctx))
		}
		if first.Run.Commit(ctx) {
			t.Fatal("Commit returned true after the lease was lost")
		}
		first.Run.Stop()
		first.Run.Complete(ledger.Outcome{Kind: "test", Status: 503, Body: []byte("retry")}, "", 503, nil)
		retry := lifecycle.Decide(ctx, l, request("k1", "a"), lifecycle.Config{})
		if retry.Run != nil {
			defer retry.Run.Stop()
		}
		if got, want := summary(retry), (verdict{Verdict: lifecycle.Claimed}); got != want {
			t.Errorf("retry: %+v, want %+v (the refusal given after the lease was lost must not be stored)", got, want)
		}
	})
}
