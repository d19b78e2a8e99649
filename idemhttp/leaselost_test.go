package idemhttp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// A handler hears through its context that its lease is lost, before it
// makes its effect: the first run waits for its context, and makes the
// effect only if the context is still alive after ten seconds.
//
//   - taken over: another claim took the key (a new token and fence, as a
//     retry's takeover writes them); the next extension finds it, the
//     cause is ledger.ErrLeaseLost, and Commit returns false;
//   - found by Commit: the same takeover, with a lease long enough that
//     no extension runs before the handler's Commit, which finds it: it
//     returns false and cancels the context;
//   - locked for a whole lease: another session holds the ledger's rows
//     locked past the lease, so no extension is confirmed and a retry
//     waiting behind the same lock may take the key over; the cause is
//     the heartbeat's expiry, which matches ledger.ErrLeaseLost, and once
//     the lock is gone the key is released and a retry runs the effect,
//     once.
//
// Before the handler's context was tied to the lease, both runs ended
// with the effect made after the lease was gone.
func TestLeaseLostCancelsHandler(t *testing.T) {
	for _, how := range []string{"taken over", "found by Commit", "locked for a whole lease"} {
		t.Run(how, func(t *testing.T) {
			eachEngine(t, func(t *testing.T, e string) { testLeaseLost(t, e, how) })
		})
	}
}

func testLeaseLost(t *testing.T, e, how string) {
	takeover := how != "locked for a whole lease"
	lease := 600 * time.Millisecond
	if how == "found by Commit" {
		lease = 6 * time.Second // the first extension runs after 2 s
	}
	stolen := make(chan struct{})
	type seen struct {
		cause     error
		committed bool
	}
	first := make(chan seen, 1)
	var effects sync.Map // run number -> true when its effect was made
	var runs sync.Mutex
	n := 0
	h := func(w http.ResponseWriter, r *http.Request) {
		runs.Lock()
		n++
		run := n
		runs.Unlock()
		if run > 1 {
			effects.Store(run, true)
			w.WriteHeader(201)
			return
		}
		ctx := r.Context()
		var s seen
		if how == "found by Commit" {
			<-stolen
			s.committed = Commit(ctx)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		if ctx.Err() == nil {
			effects.Store(run, true)
		}
		s.cause = context.Cause(ctx)
		if how == "taken over" {
			s.committed = Commit(ctx)
		}
		first <- s
		w.WriteHeader(503)
	}
	b := setup(t, e, Options{}, ledger.Options{Lease: lease}, h)

	done := make(chan answer, 1)
	go func() { done <- b.do(t, "POST", "/", "", "k") }()
	for b.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	var got seen
	if takeover {
		steal := "UPDATE idempotency_ledger SET lease_token = 'taken', fence = fence + 1 WHERE state = 'in_flight'"
		if _, err := b.db.ExecContext(ctx, steal); err != nil {
			t.Fatal(err)
		}
		close(stolen)
		got = <-first
		if !errors.Is(got.cause, ledger.ErrLeaseLost) || errors.Is(got.cause, lifecycle.ErrLeaseExpired) {
			t.Fatalf("cause %v, want the extension's ledger.ErrLeaseLost; events:\n%s", got.cause, eventList(b.obs.All()))
		}
		if got.committed {
			t.Error("Commit returned true after the lease was taken over")
		}
		<-done
		if rec := b.record(t, "k"); rec == nil || rec.State != ledger.StateInFlight || rec.Fence != 2 {
			t.Fatalf("record %+v, want the other claim's, untouched", rec)
		}
		op := map[string]string{"taken over": "extend", "found by Commit": "commit"}[how]
		if !b.obs.has(func(ev ledger.Event) bool { return ev.Kind == ledger.EventLeaseLost && ev.Op == op }) {
			t.Errorf("no lease_lost with Op %s; events:\n%s", op, eventList(b.obs.All()))
		}
	} else {
		lock, err := b.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE takes the write lock
		if err != nil {
			t.Fatal(err)
		}
		if stmt := tableLock[e]; stmt != "" {
			if _, err := lock.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		got = <-first
		if err := lock.Rollback(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(got.cause, lifecycle.ErrLeaseExpired) || !errors.Is(got.cause, ledger.ErrLeaseLost) {
			t.Fatalf("cause %v, want the heartbeat's expiry; events:\n%s", got.cause, eventList(b.obs.All()))
		}
		if a := <-done; a.status != 503 {
			t.Fatalf("first request: %+v, want its 503", a)
		}
		if !b.obs.has(func(ev ledger.Event) bool {
			return ev.Kind == ledger.EventLeaseLost && ev.Op == "extend" && errors.Is(ev.Err, lifecycle.ErrLeaseExpired)
		}) {
			t.Errorf("no lease_lost reporting the expiry; events:\n%s", eventList(b.obs.All()))
		}
		// The first run gave the key back; a retry runs the effect.
		if a := b.do(t, "POST", "/", "", "k"); a.status != 201 {
			t.Fatalf("retry: %+v, want 201; events:\n%s", a, eventList(b.obs.All()))
		}
	}
	var made []any
	effects.Range(func(k, _ any) bool { made = append(made, k); return true })
	want := 1 // the retry's
	if takeover {
		want = 0 // the other claim is not run here
	}
	if len(made) != want {
		t.Fatalf("effects made by runs %v, want %d", made, want)
	}
}
