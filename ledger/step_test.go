package ledger_test

import (
	"database/sql"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// TestSteps: the recorded steps of an operation on every driver: recorded
// under the lease, refused under a stale fence, seen by the same
// fingerprint alone, kept by Release and by a takeover, deleted once the
// operation completed, by ForgetSteps or by Purge.
func TestSteps(t *testing.T) {
	eachDriver(t, testSteps[*sql.Tx], testSteps[pgx.Tx])
}

// names returns the names of steps, sorted.
func names(steps map[string][]byte) []string { return slices.Sorted(maps.Keys(steps)) }

func testSteps[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	steps := func(c *ledger.Claim) map[string][]byte {
		t.Helper()
		got, err := l.Steps(ctx, c)
		if err != nil {
			t.Fatalf("Steps: %v", err)
		}
		return got
	}
	first := b.claim(t, req("k", "p"))
	if got := steps(first); len(got) != 0 {
		t.Fatalf("steps of a new record: %v", names(got))
	}
	if err := l.RecordStep(ctx, first, "charge", []byte("ch_1")); err != nil {
		t.Fatalf("RecordStep: %v", err)
	}
	if err := l.RecordStep(ctx, first, "empty", nil); err != nil {
		t.Fatalf("RecordStep of an empty result: %v", err)
	}
	got := steps(first)
	if string(got["charge"]) != "ch_1" || got["empty"] == nil || len(got["empty"]) != 0 || len(got) != 2 {
		t.Fatalf("steps = %q; want charge=ch_1 and an empty result", got)
	}

	// Another fingerprint sees none of them.
	other := &ledger.Claim{Request: req("k", "other")}
	if got := steps(other); len(got) != 0 {
		t.Errorf("steps seen by another fingerprint: %v", names(got))
	}
	for _, c := range []struct {
		payload string
		want    bool
	}{{"p", true}, {"other", false}} {
		if has, err := l.HasSteps(ctx, "tenant-1", "k", fp(c.payload)); has != c.want || err != nil {
			t.Errorf("HasSteps(%s) = %v, %v; want %v", c.payload, has, err, c.want)
		}
	}

	// The lease runs out and a retry takes the record over: it sees the
	// step; the first holder's fence is stale and its step refused.
	b.clock.Advance(2 * time.Minute)
	second := b.claim(t, req("k", "p"))
	if second.Fence != first.Fence+1 {
		t.Fatalf("takeover fence %d; want %d", second.Fence, first.Fence+1)
	}
	if err := l.RecordStep(ctx, first, "ship", []byte("late")); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("RecordStep under a stale fence: %v; want ErrLeaseLost", err)
	}
	if got := names(steps(second)); !slices.Equal(got, []string{"charge", "empty"}) {
		t.Errorf("steps after the takeover = %v; want [charge empty]", got)
	}
	if err := l.RecordStep(ctx, second, "ship", []byte("sh_1")); err != nil {
		t.Fatal(err)
	}

	// Release keeps them: the next run resumes.
	if err := l.Release(ctx, second); err != nil {
		t.Fatal(err)
	}
	third := b.claim(t, req("k", "p"))
	if got := names(steps(third)); !slices.Equal(got, []string{"charge", "empty", "ship"}) {
		t.Errorf("steps after Release = %v; want [charge empty ship]", got)
	}
	if err := l.RecordStep(ctx, second, "mail", []byte("x")); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("RecordStep by a released claim: %v; want ErrLeaseLost", err)
	}

	// ForgetSteps deletes nothing while the record is in flight, and
	// everything once it completed.
	if err := l.ForgetSteps(ctx, third); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "idempotency_steps"); n != 3 {
		t.Errorf("%d steps after ForgetSteps in flight; want 3", n)
	}
	if err := l.Complete(ctx, third, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordStep(ctx, third, "mail", []byte("x")); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("RecordStep after Complete: %v; want ErrLeaseLost", err)
	}
	if err := l.ForgetSteps(ctx, third); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "idempotency_steps"); n != 0 {
		t.Errorf("%d steps after Complete and ForgetSteps; want 0", n)
	}
	if s, err := l.Stats(ctx); err != nil || s.Steps != 0 {
		t.Errorf("Stats.Steps = %d, %v; want 0", s.Steps, err)
	}

	// Bad names are refused before the database is used.
	c := b.claim(t, req("names", "p"))
	for _, name := range []string{"", string(make([]byte, ledger.MaxStepNameLength+1)), "a\x00b", "\xff"} {
		if err := l.RecordStep(ctx, c, name, nil); !errors.Is(err, ledger.ErrInvalidRequest) {
			t.Errorf("RecordStep(%q): %v; want ErrInvalidRequest", name, err)
		}
	}
}

// TestStepsPurge: Purge deletes the steps of operations that ended (the
// record completed, or gone) once older than the TTL, and keeps those of a
// record in flight, however old.
func TestStepsPurge(t *testing.T) {
	eachDriver(t, testStepsPurge[*sql.Tx], testStepsPurge[pgx.Tx])
}

func testStepsPurge[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	record := func(c *ledger.Claim, name string) {
		t.Helper()
		if err := l.RecordStep(ctx, c, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	// t0: "done" completes at once, without ForgetSteps (a crash between
	// the two); "slow" is taken over at t0+50m and stays in flight.
	done := b.claim(t, req("done", "p"))
	record(done, "a")
	if err := l.Complete(ctx, done, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	slow := b.claim(t, req("slow", "p"))
	record(slow, "a")
	b.clock.Advance(50 * time.Minute)
	b.claim(t, req("slow", "p")) // a takeover: the record lives on, in flight
	// t0+75m: both steps are older than the TTL; "done" has expired.
	b.clock.Advance(25 * time.Minute)
	fresh := b.claim(t, req("fresh", "p"))
	record(fresh, "a")
	if err := l.Complete(ctx, fresh, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Purge(ctx, ledger.PurgeOptions{BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	left, err := l.FindSteps(ctx, "slow", 10)
	if err != nil || len(left) != 1 || left[0].Name != "a" || left[0].Fence != 1 {
		t.Errorf("steps of the record in flight after Purge: %+v, %v; want step a of fence 1", left, err)
	}
	if n := b.count(t, "idempotency_steps"); n != 2 {
		t.Errorf("%d steps after Purge; want 2 (slow's, and fresh's, younger than the TTL)", n)
	}
	b.clock.Advance(61 * time.Minute)
	if _, err := l.Purge(ctx, ledger.PurgeOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "idempotency_steps"); n != 0 {
		t.Errorf("%d steps after the records expired and Purge; want 0", n)
	}
}

// TestStepTx: a database step's record commits or rolls back with the
// caller's transaction, its writes with it.
func TestStepTx(t *testing.T) {
	eachDriver(t, testStepTx[*sql.Tx], testStepTx[pgx.Tx])
}

func testStepTx[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	c := b.claim(t, req("k", "p"))
	for _, commit := range []bool{false, true} {
		tx := b.begin(t)
		if _, err := b.insertOrder(ctx, tx, "book"); err != nil {
			t.Fatal(err)
		}
		if err := l.RecordStepTx(ctx, tx, c, "order", []byte("1")); err != nil {
			t.Fatal(err)
		}
		want := 0
		if commit {
			b.commit(t, tx)
			want = 1
		} else {
			b.rollback(t, tx)
		}
		got, err := l.Steps(ctx, c)
		if err != nil || len(got) != want || b.count(t, "orders") != want {
			t.Errorf("commit %v: steps %v, %v, %d orders; want %d of each", commit, names(got), err, b.count(t, "orders"), want)
		}
	}
	// A stale fence is refused inside a transaction too: at once, or,
	// where the record travels with the COMMIT (pgxv5's own
	// transactions), by the commit, which then keeps neither the record
	// nor the transaction's writes.
	b.clock.Advance(2 * time.Minute)
	b.claim(t, req("k", "p"))
	tx := b.begin(t)
	defer b.rollback(t, tx)
	if _, err := b.insertOrder(ctx, tx, "late"); err != nil {
		t.Fatal(err)
	}
	err := l.RecordStepTx(ctx, tx, c, "late", nil)
	atCommit := err == nil
	if atCommit {
		err = b.d.Driver.Commit(ctx, tx)
	}
	if !errors.Is(err, ledger.ErrLeaseLost) || atCommit != b.d.StepsWithCommit {
		t.Errorf("RecordStepTx under a stale fence: %v (at the commit: %v); want ErrLeaseLost, at the commit where the record rides it (%v)", err, atCommit, b.d.StepsWithCommit)
	}
	if got, err := l.Steps(ctx, c); err != nil || len(got) != 1 || b.count(t, "orders") != 1 {
		t.Errorf("after the refused record: steps %v, %v, %d orders; want the first step and order alone", names(got), err, b.count(t, "orders"))
	}
}

// TestStepTxTakeover: a takeover that comes while a database step's
// transaction is open never leaves the step's writes made twice. Where the
// record is sent at once, the takeover waits for the transaction, so the
// new holder, which reads the steps after winning, finds the step. (Were
// the guard a plain read, the takeover would win at once and read no step,
// and the step's transaction would then commit under a stale fence.)
// Where the record travels with the COMMIT (pgxv5's own transactions), the
// takeover wins at once and reads no step, and the COMMIT, its guard
// failing, keeps neither the record nor the writes.
func TestStepTxTakeover(t *testing.T) {
	eachDriver(t, testStepTxTakeover[*sql.Tx], testStepTxTakeover[pgx.Tx])
}

func testStepTxTakeover[TTx any](t *testing.T, b *bundle[TTx]) {
	ctx, l := b.ctx, b.l
	first := b.claim(t, req("k", "p"))
	tx := b.begin(t)
	defer b.rollback(t, tx)
	if _, err := b.insertOrder(ctx, tx, "ride"); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordStepTx(ctx, tx, first, "ride", []byte("r1")); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Minute) // the first holder's lease has run out
	type seen struct {
		fence int64
		steps []string
		err   error
	}
	done := make(chan seen, 1)
	go func() {
		c, err := l.Claim(ctx, req("k", "p"))
		if err != nil {
			done <- seen{err: err}
			return
		}
		got, err := l.Steps(ctx, c)
		done <- seen{fence: c.Fence, steps: names(got), err: err}
	}()
	// Give the takeover time to get as far as it can while tx is open.
	time.Sleep(300 * time.Millisecond)
	cerr := b.d.Driver.Commit(ctx, tx)
	got := <-done
	want, orders := []string{"ride"}, 1
	if b.d.StepsWithCommit {
		want, orders = nil, 0
		if !errors.Is(cerr, ledger.ErrLeaseLost) {
			t.Errorf("commit after the takeover: %v; want ErrLeaseLost", cerr)
		}
	} else if cerr != nil {
		t.Errorf("commit: %v", cerr)
	}
	if got.err != nil || got.fence != 2 || !slices.Equal(got.steps, want) || b.count(t, "orders") != orders {
		t.Errorf("takeover during the step's transaction: fence %d, steps %v, %v, %d orders; want fence 2, steps %v, %d orders", got.fence, got.steps, got.err, b.count(t, "orders"), want, orders)
	}
}
