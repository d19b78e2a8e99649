package ledger_test

import (
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// TestStepsNotResumedAfterExpiry: steps recorded under a record that then
// expired belong to an operation that ended; a claim of the key afterwards
// starts a new operation, which must not resume them, whatever its
// fingerprint, nor a later takeover of it. A takeover of a record that has
// not expired (a lease that ran out, a release) keeps them: the same
// operation goes on.
func TestStepsNotResumedAfterExpiry(t *testing.T) {
	eachDriver(t, testStepsNotResumedAfterExpiry[*sql.Tx], testStepsNotResumedAfterExpiry[pgx.Tx])
}

func testStepsNotResumedAfterExpiry[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	record := func(c *ledger.Claim, name string) {
		t.Helper()
		if err := l.RecordStep(ctx, c, name, []byte(name)); err != nil {
			t.Fatalf("RecordStep %s: %v", name, err)
		}
	}
	check := func(what string, c *ledger.Claim, want ...string) {
		t.Helper()
		got, err := l.Steps(ctx, c)
		if err != nil || !slices.Equal(names(got), want) {
			t.Errorf("%s: steps %v, %v; want %v", what, names(got), err, want)
		}
		has, err := l.HasSteps(ctx, c.Request.Scope, c.Request.Key, c.Request.Fingerprint)
		if err != nil || has != (len(want) > 0) {
			t.Errorf("%s: HasSteps %v, %v; want %v", what, has, err, len(want) > 0)
		}
	}
	past := func(d time.Duration) { b.clock.Advance(d) }

	// The same operation goes on across a lease that ran out and a
	// release.
	c := b.claim(t, req("live", "p"))
	record(c, "a")
	past(2 * time.Minute)
	c = b.claim(t, req("live", "p"))
	check("takeover of a lease that ran out", c, "a")
	record(c, "b")
	if err := l.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = b.claim(t, req("live", "p"))
	check("claim after a release", c, "a", "b")

	// A run that vanished; its record expires, in flight.
	c = b.claim(t, req("vanished", "p"))
	record(c, "a")
	past(2 * time.Hour)
	c = b.claim(t, req("vanished", "p"))
	check("same payload after the in-flight record expired", c)
	// The new operation's own run vanishes too: its retry (a takeover
	// of the same operation) finds nothing of the old one either.
	past(2 * time.Minute)
	c = b.claim(t, req("vanished", "p"))
	check("takeover of the new operation", c)

	// A completed operation whose steps were left (ForgetSteps never ran).
	c = b.claim(t, req("completed", "p"))
	record(c, "a")
	if err := l.Complete(ctx, c, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	past(2 * time.Hour)
	c = b.claim(t, req("completed", "p"))
	check("same payload after the completed record expired", c)

	// Another payload takes the expired record, then the first payload
	// comes back once that one expired too.
	c = b.claim(t, req("reused", "p"))
	record(c, "a")
	past(2 * time.Hour)
	c = b.claim(t, req("reused", "q"))
	check("another payload after expiry", c)
	past(2 * time.Hour)
	c = b.claim(t, req("reused", "p"))
	check("the first payload again, after the other expired", c)

	// A released record that expired.
	c = b.claim(t, req("released", "p"))
	record(c, "a")
	if err := l.Release(ctx, c); err != nil {
		t.Fatal(err)
	}
	past(2 * time.Hour)
	c = b.claim(t, req("released", "p"))
	check("same payload after the released record expired", c)
}

// TestCompleteSteps: CompleteSteps stores the outcome and, on the
// PostgreSQL drivers, deletes the key's steps in the same statement
// (forgot); elsewhere it stores the outcome alone and leaves them to
// ForgetSteps. A lease lost stores and deletes nothing.
func TestCompleteSteps(t *testing.T) {
	eachDriver(t, testCompleteSteps[*sql.Tx], testCompleteSteps[pgx.Tx])
}

func testCompleteSteps[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	inStatement := b.d.Engine == "postgres"
	c := b.claim(t, req("k", "p"))
	if err := l.RecordStep(ctx, c, "a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	stale := *c
	stale.Fence--
	if forgot, err := l.CompleteSteps(ctx, &stale, ledger.Outcome{Status: 201}); forgot || !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("CompleteSteps under a stale fence: %v, %v; want false, ErrLeaseLost", forgot, err)
	}
	if n := b.count(t, "idempotency_steps"); n != 1 {
		t.Errorf("after the refused CompleteSteps: %d steps; want 1", n)
	}
	forgot, err := l.CompleteSteps(ctx, c, ledger.Outcome{Status: 201, Body: []byte("done")})
	if err != nil || forgot != inStatement {
		t.Fatalf("CompleteSteps: %v, %v; want %v, nil", forgot, err, inStatement)
	}
	want := 1
	if forgot {
		want = 0
	}
	if n := b.count(t, "idempotency_steps"); n != want {
		t.Errorf("after CompleteSteps: %d steps; want %d", n, want)
	}
	got, err := l.Get(ctx, "tenant-1", "k")
	if err != nil || got.State != ledger.StateCompleted || string(got.Outcome.Body) != "done" {
		t.Errorf("record after CompleteSteps: %+v, %v", got, err)
	}
}
