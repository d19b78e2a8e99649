package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// slowClaim is a ledger whose claims answer late, as a claim does that
// waited behind a lock on the record: the store counted the lease from
// when the statement began, so most of it is gone when the answer comes.
type slowClaim struct {
	lifecycle.Ledger
	wait time.Duration
}

func (s slowClaim) Claim(ctx context.Context, req ledger.Request) (*ledger.Claim, error) {
	c, err := s.Ledger.Claim(ctx, req)
	time.Sleep(s.wait)
	return c, err
}

// TestSlowClaimGetsWholeLease: a claim that won after waiting for most of
// its lease starts its handler with a whole lease, so that a retry a
// moment later finds the key in flight instead of taking it over while
// the first handler makes its effect (two effects, found by a newcomer
// holding a row lock past the lease).
func TestSlowClaimGetsWholeLease(t *testing.T) {
	const short = time.Second
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: short, CacheBytes: ledger.CacheOff}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		first := lifecycle.Decide(ctx, slowClaim{l, 800 * time.Millisecond}, request("slow", "a"), lifecycle.Config{})
		if first.Verdict != lifecycle.Claimed {
			t.Fatalf("first request: %+v", summary(first))
		}
		defer first.Run.Stop()
		hctx := first.Run.Context(ctx)
		time.Sleep(250 * time.Millisecond) // past the lease as the store first counted it, before a third of a lease
		retry := lifecycle.Decide(ctx, l, request("slow", "a"), lifecycle.Config{})
		if retry.Run != nil {
			retry.Run.Stop()
		}
		if got, want := summary(retry), (verdict{Verdict: lifecycle.Refused, Why: lifecycle.InFlight, Event: "in_flight"}); got != want {
			t.Errorf("retry while the first handler runs: %+v, want %+v", got, want)
		}
		if hctx.Err() != nil {
			t.Errorf("the first handler's context ended: %v", context.Cause(hctx))
		}
	})
}
