package lifecycle_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// TestNoAnswerAfterGone: a run that passed its commit point, then lost its
// store for longer than its lease (a lock held on its record, or a silent
// network that delivers its statements late), is answered around truthfully:
// retries meanwhile are told in flight, busy or unavailable, and once one
// is told NotStored (410), no later request ever gets the first run's
// answer, however late its statement lands. It waits out leases and
// faults: the drivers run at once, alongside the package's other waiting
// tests.
func TestNoAnswerAfterGone(t *testing.T) {
	t.Parallel()
	testdb.EachAtOnce(t, testNoAnswerAfterGone[*sql.Tx], testNoAnswerAfterGone[pgx.Tx])
}

func testNoAnswerAfterGone[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	const short = 1500 * time.Millisecond
	f := testdb.NewFaulty(t, d, 0)
	opts := ledger.Options{TTL: time.Hour, Lease: short, CacheBytes: ledger.CacheOff}
	first, err := ledger.New(f.Driver, opts) // the first run's server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	retries := newLedger(t, d, opts) // another server's
	type fault struct {
		name  string
		start func(key string) (end func())
	}
	faults := []fault{{"row lock", func(key string) func() { return d.HoldRecord(t, "tenant-1", key) }}}
	if f.Proxy != nil {
		faults = append(faults, fault{"silence", func(string) func() { f.Proxy.Silence(); return f.Proxy.Resume }})
	}
	for _, flt := range faults {
		t.Run(flt.name, func(t *testing.T) {
			ctx := context.Background()
			key := "gone-" + flt.name
			a := lifecycle.Decide(ctx, first, request(key, "a"), lifecycle.Config{})
			if a.Verdict != lifecycle.Claimed {
				t.Fatalf("first request: %+v", summary(a))
			}
			if !a.Run.Commit(ctx) {
				t.Fatal("Commit returned false on a live lease")
			}
			a.Run.Stop()
			end := flt.start(key)
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.Run.Complete(created, "", 201, nil)
			}()
			var seen []verdict
			decide := func() {
				dctx, cancel := context.WithTimeout(ctx, 3*short)
				defer cancel()
				d := lifecycle.Decide(dctx, retries, request(key, "a"), lifecycle.Config{})
				if d.Run != nil {
					// A retry that runs is the handler's second run: the
					// first passed its commit point, so this must not be.
					d.Run.Stop()
					t.Errorf("a retry ran the request again: %+v", summary(d))
				}
				seen = append(seen, summary(d))
			}
			time.Sleep(short + 200*time.Millisecond) // past the first run's lease
			decide()
			decide()
			end()
			<-done
			for range 3 {
				decide()
			}
			gone := false
			for i, v := range seen {
				switch {
				case v.Verdict == lifecycle.Refused && v.Why == lifecycle.NotStored:
					gone = true
				case gone && v.Verdict == lifecycle.Replayed:
					t.Fatalf("answer %d replays the first run's answer after a 410 was given: %+v", i+1, seen)
				}
			}
			last := seen[len(seen)-1]
			if last.Verdict != lifecycle.Replayed && last.Why != lifecycle.NotStored {
				t.Errorf("after the fault the answer is %+v, want the stored answer or NotStored; all: %+v", last, seen)
			}
			t.Logf("answers: %+v", seen)
		})
	}
}
