package ledger_test

import (
	"database/sql"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

func TestClaimFresh(t *testing.T) { eachDriver(t, testClaimFresh[*sql.Tx], testClaimFresh[pgx.Tx]) }

func testClaimFresh[TTx any](t *testing.T, b *bundle[TTx]) {
	c := b.claim(t, req("k1", "p"))
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(c.Token) {
		t.Errorf("token %q, want 32 hex digits", c.Token)
	}
	if c.Fence != 1 || c.Replayed() || !c.LeaseExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("claim = fence %d, replayed %v, lease until %v; want 1, false, %v", c.Fence, c.Replayed(), c.LeaseExpiresAt, t0.Add(time.Minute))
	}
	r := b.get(t, "k1")
	want := ledger.Record{
		Scope: "tenant-1", Key: "k1", Fingerprint: fp("p"), State: ledger.StateInFlight, Fence: 1,
		LeaseExpiresAt: t0.Add(time.Minute), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
	if !recordEqual(*r, want) {
		t.Errorf("record = %+v\nwant %+v", *r, want)
	}
	// Another scope is another key.
	if c := b.claim(t, ledger.Request{Scope: "tenant-2", Key: "k1", Fingerprint: fp("other")}); c.Fence != 1 || c.Replayed() {
		t.Errorf("claim in another scope: fence %d, replayed %v", c.Fence, c.Replayed())
	}
	if _, err := b.l.Get(b.ctx, "tenant-1", "nope"); !errors.Is(err, ledger.ErrNotFound) || err.Error() != "ledger: get: record not found" {
		t.Errorf("Get of a missing key = %v", err)
	}
}

func recordEqual(a, b ledger.Record) bool {
	return a.Scope == b.Scope && a.Key == b.Key && a.Fingerprint == b.Fingerprint && a.State == b.State &&
		a.Fence == b.Fence && a.LeaseExpiresAt.Equal(b.LeaseExpiresAt) && a.CreatedAt.Equal(b.CreatedAt) &&
		a.CompletedAt.Equal(b.CompletedAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.Outcome.Status == b.Outcome.Status && string(a.Outcome.Body) == string(b.Outcome.Body) &&
		headerEqual(a.Outcome.Header, b.Outcome.Header)
}

func headerEqual(a, b map[string][]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb := b[k]
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if va[i] != vb[i] {
				return false
			}
		}
	}
	return true
}

// TestClaimDecisions walks every path of Claim. Each case builds the
// existing row, moves the clock, then claims; TTL is 1 h and the lease 1 min.
func TestClaimDecisions(t *testing.T) {
	eachDriver(t, testClaimDecisions[*sql.Tx], testClaimDecisions[pgx.Tx])
}

func testClaimDecisions[TTx any](t *testing.T, b0 *bundle[TTx]) {
	type want struct {
		err        error         // sentinel, or nil
		retryAfter time.Duration // for ErrInFlight
		fence      int64         // for a win or a replay
		replay     bool
	}
	tests := []struct {
		name     string
		complete bool          // complete the first claim
		advance  time.Duration // before the second claim
		payload  string        // of the second claim ("p" is the first's)
		want     want
	}{
		{"in flight, same fingerprint", false, 10 * time.Second, "p", want{err: ledger.ErrInFlight, retryAfter: 50 * time.Second}},
		{"in flight, different fingerprint", false, 10 * time.Second, "q", want{err: ledger.ErrKeyReused}},
		{"in flight, 1ms before the lease runs out", false, time.Minute - time.Millisecond, "p", want{err: ledger.ErrInFlight, retryAfter: time.Millisecond}},
		{"in flight, lease ran out, same fingerprint: takeover", false, time.Minute, "p", want{fence: 2}},
		{"in flight, lease ran out, different fingerprint", false, 30 * time.Minute, "q", want{err: ledger.ErrKeyReused}},
		{"in flight, lease and TTL ran out, different fingerprint: fresh", false, time.Hour, "q", want{fence: 2}},
		{"completed, same fingerprint: replay", true, 59 * time.Minute, "p", want{fence: 1, replay: true}},
		{"completed, different fingerprint", true, 59 * time.Minute, "q", want{err: ledger.ErrKeyReused}},
		{"completed and expired, same fingerprint: runs again", true, time.Hour, "p", want{fence: 2}},
		{"completed and expired, different fingerprint: fresh", true, time.Hour + time.Second, "q", want{fence: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupOn(t, freshLike(t, b0.d))
			first := b.claim(t, req("k", "p"))
			if tt.complete {
				if err := b.l.Complete(b.ctx, first, ledger.Outcome{Status: 201, Body: []byte("done")}); err != nil {
					t.Fatal(err)
				}
			}
			b.clock.Advance(tt.advance)
			c, err := b.l.Claim(b.ctx, req("k", tt.payload))
			if tt.want.err != nil {
				if !errors.Is(err, tt.want.err) {
					t.Fatalf("Claim = %v, %v; want %v", c, err, tt.want.err)
				}
				var inflight *ledger.InFlightError
				if errors.As(err, &inflight) != (tt.want.err == ledger.ErrInFlight) {
					t.Fatalf("errors.As(%v, *InFlightError) mismatch", err)
				}
				if inflight != nil && inflight.RetryAfter != tt.want.retryAfter {
					t.Errorf("RetryAfter = %v, want %v", inflight.RetryAfter, tt.want.retryAfter)
				}
				// A refusal changes nothing.
				if r := b.get(t, "k"); r.Fence != 1 || r.Fingerprint != fp("p") {
					t.Errorf("after a refusal: fence %d, fingerprint changed %v", r.Fence, r.Fingerprint != fp("p"))
				}
				return
			}
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if c.Fence != tt.want.fence || c.Replayed() != tt.want.replay {
				t.Fatalf("claim: fence %d, replayed %v; want %d, %v", c.Fence, c.Replayed(), tt.want.fence, tt.want.replay)
			}
			if c.Replayed() {
				if c.Token != "" || !c.LeaseExpiresAt.IsZero() {
					t.Errorf("replay holds a lease: token %q, until %v", c.Token, c.LeaseExpiresAt)
				}
				o := c.Replay.Outcome
				if o.Status != 201 || string(o.Body) != "done" || o.Header != nil {
					t.Errorf("replayed outcome %+v", o)
				}
				return
			}
			// A win is a fresh in-flight record owned by the new claim.
			now := t0.Add(tt.advance)
			want := ledger.Record{
				Scope: "tenant-1", Key: "k", Fingerprint: fp(tt.payload), State: ledger.StateInFlight, Fence: tt.want.fence,
				LeaseExpiresAt: now.Add(time.Minute), CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			}
			if r := b.get(t, "k"); !recordEqual(*r, want) {
				t.Errorf("record = %+v\nwant %+v", *r, want)
			}
			if c.Token == first.Token {
				t.Error("takeover reused the old token")
			}
		})
	}
}

func TestInFlightError(t *testing.T) {
	err := error(&ledger.InFlightError{RetryAfter: 1500 * time.Millisecond})
	if got, want := err.Error(), "ledger: idempotency key in flight; retry after 1.5s"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, ledger.ErrInFlight) || errors.Is(err, ledger.ErrKeyReused) {
		t.Error("errors.Is mismatch")
	}
}
