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
