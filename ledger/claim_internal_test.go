package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/idemledger/idemledger/driver"
)

// churn is an Executor whose record changes between every read and write
// of a claim: the claim never wins, and what it reads back is either gone
// (released or purged in between) or open to a takeover. Methods a claim
// does not call are left to the nil embedded interface.
type churn struct {
	driver.Executor
	open          bool // answer with an expired row instead of none
	claims, reads int
}

func (c *churn) Claim(context.Context, driver.ClaimParams) (driver.ClaimResult, error) {
	c.claims++
	if c.open {
		// Completed long ago and expired at 1 ms: anyone may take it
		// over, so the claim starts over.
		return driver.ClaimResult{Now: 10, Row: &driver.Row{
			Scope: "s", Key: "k", Fingerprint: make([]byte, 32), State: "completed",
			Fence: 1, Status: 201, CreatedAt: 0, CompletedAt: 0, ExpiresAt: 1,
		}}, nil
	}
	return driver.ClaimResult{Now: 10}, nil
}

func (c *churn) Get(context.Context, driver.GetParams) (driver.GetResult, error) {
	c.reads++
	return driver.GetResult{Now: 10}, nil
}

// TestClaimGivesUpRetryable: a claim that loses the race for its record
// claimAttempts times running returns an error matching ErrRetryable (a
// later attempt may win), not ErrBusy, after exactly that many writes.
func TestClaimGivesUpRetryable(t *testing.T) {
	for _, open := range []bool{false, true} {
		ex := &churn{open: open}
		l := &Ledger[any]{ttl: DefaultTTL, lease: DefaultLease, maxKey: DefaultMaxKeyLength}
		c, err := l.claimWith(context.Background(), ex, Request{Scope: "s", Key: "k"}, ex.Claim, nil)
		const want = "ledger: claim: retryable: the record kept changing during 5 attempts"
		if c != nil || err == nil || err.Error() != want {
			t.Fatalf("open=%t: claim = %v, %v; want nil, %q", open, c, err, want)
		}
		if !errors.Is(err, ErrRetryable) || errors.Is(err, ErrBusy) {
			t.Errorf("open=%t: %v: ErrRetryable %t, ErrBusy %t; want true, false", open, err, errors.Is(err, ErrRetryable), errors.Is(err, ErrBusy))
		}
		wantReads := claimAttempts
		if open {
			wantReads = 0 // the claim's own read showed the row
		}
		if ex.claims != claimAttempts || ex.reads != wantReads {
			t.Errorf("open=%t: %d claims and %d reads, want %d and %d", open, ex.claims, ex.reads, claimAttempts, wantReads)
		}
	}
}
