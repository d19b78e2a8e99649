package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// deadlineLease is the lease of the deadline tests, the one of the
// report that found Commit waiting 23.5 s on a row lock.
const deadlineLease = 1500 * time.Millisecond

// deadlineSlack is how long after its deadline (the lease's end, or a
// second from the call for a lease that has nearly run out) an operation
// may take to answer: the fault (a lock, a silence) lasts this much
// longer, and an answer that only comes when it ends is too late.
const deadlineSlack = 2 * time.Second

// TestLeaseStatementsAnswerWithinLease holds each lease-mode statement up,
// on every driver, with a fault that lasts well past the lease: another
// transaction's lock on the record (a row lock FOR UPDATE; SQLite's write
// lock), and on the drivers that talk to a server a silent network (every
// packet held, no reset). Each operation must answer before the fault
// ends, with an error (never success, never a lost lease it cannot know
// of), and the error must tell the truth: unless it matches
// ErrOutcomeUnknown, the record is as before once the fault is gone and
// whatever the statement left behind has landed. Under a lock on a server,
// the answer must be ErrBusy: the server's own lock wait must end before
// the lease, or the statement writes once the lock is gone. The drivers run
// in turn, alone in the package: the margin between the server's lock
// timeout and the client's deadline is thin enough that with the drivers
// at once, on a loaded machine, the client's came first.
func TestLeaseStatementsAnswerWithinLease(t *testing.T) {
	testdb.Each(t, testLeaseDeadline[*sql.Tx], testLeaseDeadline[pgx.Tx])
}

func testLeaseDeadline[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	f := testdb.NewFaulty(t, d, 0)
	opts := ledger.Options{TTL: time.Hour, Lease: deadlineLease}
	l, err := ledger.New(f.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	clean, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clean.Close() })
	ctx := context.Background()

	type fault struct {
		name  string
		start func(key string) (end func())
	}
	faults := []fault{{"row lock", func(key string) func() { return d.HoldRecord(t, "tenant-1", key) }}}
	if f.Proxy != nil {
		faults = append(faults, fault{"silence", func(string) func() { f.Proxy.Silence(); return f.Proxy.Resume }})
	}
	seq := 0
	for _, flt := range faults {
		for _, op := range []string{"claim", "commit", "complete", "release", "extend"} {
			seq++
			key := fmt.Sprintf("deadline-%d", seq)
			what := flt.name + " " + op
			r := req(key, "p")
			held, err := l.Claim(ctx, r)
			if err != nil {
				t.Fatalf("%s: claim: %v", what, err)
			}
			deadline := held.LeaseExpiresAt
			if op == "claim" {
				// A takeover of the record once its lease ran out: the
				// claim's write waits for the lock.
				time.Sleep(time.Until(held.LeaseExpiresAt) + 50*time.Millisecond)
				deadline = time.Now().Add(deadlineLease)
			}
			if floor := time.Now().Add(time.Second); deadline.Before(floor) {
				deadline = floor
			}
			before := recordOf(t, clean, key)

			end := flt.start(key)
			answered := make(chan error, 1)
			go func() {
				if op == "claim" {
					_, err := l.Claim(ctx, r)
					answered <- err
					return
				}
				answered <- cutOp(ctx, l, op, r, held)
			}()
			var opErr error
			select {
			case opErr = <-answered:
				end()
			case <-time.After(time.Until(deadline) + deadlineSlack):
				end()
				opErr = <-answered
				t.Errorf("%s: no answer until the fault ended, %v after the deadline (%v); then %v",
					what, deadlineSlack, deadline.Format(time.StampMilli), opErr)
				continue
			}
			t.Logf("%s: %v", what, opErr)
			if opErr == nil {
				t.Errorf("%s: success while the record could not be written", what)
				continue
			}
			if errors.Is(opErr, ledger.ErrLeaseLost) {
				t.Errorf("%s: %v; the lease was not lost, the store did not answer", what, opErr)
			}
			if flt.name == "row lock" && f.Proxy != nil && !errors.Is(opErr, ledger.ErrBusy) {
				// A server goes on waiting for the lock after its client
				// gave up, and then writes: the driver's lock timeout must
				// end the wait first, with a definite answer.
				t.Errorf("%s: %v; want ErrBusy, the server's lock timeout", what, opErr)
			}
			if errors.Is(opErr, ledger.ErrOutcomeUnknown) {
				continue
			}
			// A definite failure: nothing may land once the fault is gone.
			time.Sleep(300 * time.Millisecond)
			if after := recordOf(t, clean, key); after != before {
				t.Errorf("%s: %v, yet the record changed once the fault ended:\n before %s\n after  %s", what, opErr, before, after)
			}
		}
	}
}

// recordOf is the record of key as text, or "none".
func recordOf[TTx any](t *testing.T, l *ledger.Ledger[TTx], key string) string {
	t.Helper()
	r, err := l.Get(context.Background(), "tenant-1", key)
	if errors.Is(err, ledger.ErrNotFound) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s fence %d lease %v committed %v status %d body %q", r.State, r.Fence,
		r.LeaseExpiresAt.UnixMilli(), r.CommittedAt.UnixMilli(), r.Outcome.Status, r.Outcome.Body)
}

// TestLateClaimDoesNotHoldKey holds a claim's write on its way (the network
// falls silent as it goes: packets held, no reset; internal/faultnet's
// Hold) on the drivers that talk to a server: the claim gives
// up at its ClaimTimeout, and when the silence ends its statement reaches
// the server after the bound it carries. It must not win: nothing is
// stored for the key, and a retry claims it at once, where a claim that
// landed would hold the key for a whole lease that no handler uses. One
// case gives up at the ledger's own deadline, the other earlier, when the
// caller's context ends (a client that hung up). Like the test above, it
// waits more than it computes: the drivers run at once.
func TestLateClaimDoesNotHoldKey(t *testing.T) {
	t.Parallel()
	testdb.EachAtOnce(t, testLateClaim[*sql.Tx], testLateClaim[pgx.Tx])
}

func testLateClaim[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	f := testdb.NewFaulty(t, d, 0)
	if f.Proxy == nil {
		t.Skip("SQLite runs in the caller's process: no statement reaches it late")
	}
	opts := ledger.Options{TTL: time.Hour, Lease: 6 * time.Second, ClaimTimeout: time.Second}
	l, err := ledger.New(f.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	clean, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clean.Close() })

	for _, tc := range []struct {
		name   string
		cancel time.Duration // when the caller's context ends; 0: never
	}{
		{"deadline", 0},
		{"caller gone", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Held on its way: the statement that writes the claim, the
			// only one that carries the fingerprint (on MySQL the claim's
			// read goes through first).
			r := req("late-"+tc.name, "payload of "+tc.name)
			ctx := context.Background()
			if tc.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.cancel)
				defer cancel()
			}
			f.Proxy.Arm(r.Fingerprint[:], faultnet.Hold)
			answered := make(chan error, 1)
			go func() { _, err := l.Claim(ctx, r); answered <- err }()
			select {
			case err = <-answered:
			case <-time.After(10 * time.Second):
				f.Proxy.Resume()
				t.Fatalf("no answer 10 s into the silence, then %v", <-answered)
			}
			if !f.Proxy.Fired() {
				f.Proxy.Resume()
				t.Fatalf("the claim's write was never held (%v)", err)
			}
			// Past the claim's bound (ClaimTimeout and MaxClockSkew)
			// before the statement is let through.
			time.Sleep(ledger.MaxClockSkew + 200*time.Millisecond)
			f.Proxy.Resume()
			if !errors.Is(err, ledger.ErrOutcomeUnknown) {
				t.Errorf("claim in the silence = %v, want ErrOutcomeUnknown", err)
			}
			time.Sleep(500 * time.Millisecond) // the held statement lands
			if rec := recordOf(t, clean, r.Key); rec != "none" {
				t.Fatalf("the claim reached the server after its caller gave up, and won: %s", rec)
			}
			c, err := clean.Claim(context.Background(), r)
			if err != nil || c.Replayed() {
				t.Fatalf("retry after the silence = %+v, %v; want the key at once", c, err)
			}
		})
	}
}
