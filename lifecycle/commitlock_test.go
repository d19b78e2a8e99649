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

// TestCommitOutlastsLock: a handler makes its effect, then marks its commit
// point while a lock on its record, held for longer than the lease, keeps
// the heartbeat from confirming the lease. Nobody took the key over, so the
// effect is the key's: Commit waits out the lock, writes the mark and
// returns true, the answer is stored, and no request runs the operation a
// second time. (When Commit gave up at the lease's end, the handler answered
// 503, the key was released, and the retry after the lock paid again.)
func TestCommitOutlastsLock(t *testing.T) {
	testdb.Each(t, testCommitOutlastsLock[*sql.Tx], testCommitOutlastsLock[pgx.Tx])
}

func testCommitOutlastsLock[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	const short = 1500 * time.Millisecond
	opts := ledger.Options{TTL: time.Hour, Lease: short, CacheBytes: ledger.CacheOff}
	first := newLedger(t, d, opts)   // the first run's server
	retries := newLedger(t, d, opts) // another server's
	ctx := context.Background()
	const key = "locked"
	a := lifecycle.Decide(ctx, first, request(key, "a"), lifecycle.Config{})
	if a.Verdict != lifecycle.Claimed {
		t.Fatalf("first request: %+v", summary(a))
	}
	end := d.HoldRecord(t, "tenant-1", key)
	unlocked := make(chan struct{})
	go func() {
		defer close(unlocked)
		time.Sleep(3 * short)
		end()
	}()
	// A retry while the lock holds is refused, never run.
	retried := make(chan verdict, 1)
	go func() {
		time.Sleep(short + short/2)
		dctx, cancel := context.WithTimeout(ctx, short)
		defer cancel()
		r := lifecycle.Decide(dctx, retries, request(key, "a"), lifecycle.Config{})
		if r.Run != nil {
			r.Run.Stop()
		}
		retried <- summary(r)
	}()
	time.Sleep(short / 3) // the handler makes its effect, inside its lease
	ok := a.Run.Commit(ctx)
	a.Run.Stop()
	if !ok {
		a.Run.Complete(ledger.Outcome{Kind: "test", Status: 503, Body: []byte("retry")}, "", 503, nil)
		t.Fatal("Commit returned false: nobody took the key over, and the effect is made")
	}
	a.Run.Complete(created, "", 201, nil)
	if got := <-retried; got.Verdict == lifecycle.Claimed {
		t.Errorf("a retry during the lock ran the request again: %+v", got)
	}
	<-unlocked
	r := lifecycle.Decide(ctx, retries, request(key, "a"), lifecycle.Config{})
	if r.Run != nil {
		r.Run.Stop()
	}
	if r.Verdict != lifecycle.Replayed || r.Outcome.Status != 201 || string(r.Outcome.Body) != "paid" {
		t.Errorf("retry after the lock: %+v; want the first run's 201 replayed", summary(r))
	}
}

// TestCommitKeepsItsPlace: as TestCommitOutlastsLock, but a retry comes
// after the lease ran out and is still waiting for the lock when it ends
// (found by a newcomer: a payment service charged twice). The retry must
// not be the first to get the record, find the lease run out and the mark
// missing, and take the key over: Commit waits for the lock from before
// the retry came, so its mark lands first. Nor may the retry, finding the
// mark there and the lease run out, declare the answer lost (410) while
// the first run is about to store it: the mark renews the lease. The
// retry is refused as in flight, the first run's answer is stored, and
// the next retry replays it.
func TestCommitKeepsItsPlace(t *testing.T) {
	testdb.EachAtOnce(t, testCommitKeepsItsPlace[*sql.Tx], testCommitKeepsItsPlace[pgx.Tx])
}

func testCommitKeepsItsPlace[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	const short = 1500 * time.Millisecond
	opts := ledger.Options{TTL: time.Hour, Lease: short, CacheBytes: ledger.CacheOff}
	first := newLedger(t, d, opts)
	retries := newLedger(t, d, opts)
	ctx := context.Background()
	const key = "queued"
	a := lifecycle.Decide(ctx, first, request(key, "a"), lifecycle.Config{})
	if a.Verdict != lifecycle.Claimed {
		t.Fatalf("first request: %+v", summary(a))
	}
	end := d.HoldRecord(t, "tenant-1", key)
	unlock := time.Now().Add(3 * short)
	go func() {
		time.Sleep(time.Until(unlock))
		end()
	}()
	// The retry starts shortly before the lock ends, long after the lease
	// did, and its claim waits for the lock past its end (the claim's
	// lock timeout is half its budget, at least).
	retried := make(chan verdict, 1)
	go func() {
		time.Sleep(time.Until(unlock.Add(-short / 5)))
		r := lifecycle.Decide(ctx, retries, request(key, "a"), lifecycle.Config{})
		if r.Run != nil {
			r.Run.Stop()
			r.Run.Release(ledger.ReasonError, 503)
		}
		retried <- summary(r)
	}()
	time.Sleep(short / 3) // the handler makes its effect, inside its lease
	ok := a.Run.Commit(ctx)
	a.Run.Stop()
	// The handler takes a moment to answer after its mark: the lease the
	// mark renewed counts from when it was written (after the lock), not
	// from when it was sent, or the retry behind it finds it run out.
	time.Sleep(short / 2)
	if ok {
		a.Run.Complete(created, "", 201, nil)
	} else {
		a.Run.Complete(ledger.Outcome{Kind: "test", Status: 503, Body: []byte("retry")}, "", 503, nil)
	}
	switch got := <-retried; {
	case got.Verdict == lifecycle.Claimed:
		t.Errorf("a retry waiting for the lock when it ended ran the request again: %+v", got)
	case got.Why == lifecycle.NotStored:
		t.Errorf("a retry waiting for the lock when it ended was told the answer is lost, which the first run stored: %+v", got)
	}
	if !ok {
		t.Fatal("Commit returned false: the retry took the key over, and the effect is made")
	}
	r := lifecycle.Decide(ctx, retries, request(key, "a"), lifecycle.Config{})
	if r.Run != nil {
		r.Run.Stop()
	}
	if r.Verdict != lifecycle.Replayed || r.Outcome.Status != 201 || string(r.Outcome.Body) != "paid" {
		t.Errorf("retry after the lock: %+v; want the first run's 201 replayed", summary(r))
	}
}
