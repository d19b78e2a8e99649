package lifecycle_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// effects counts the calls of each outside step, with the key forwarded.
type effects struct {
	calls map[string]int
	keys  map[string]string
}

func (e *effects) step(name string) func(context.Context, string) ([]byte, error) {
	return func(_ context.Context, key string) ([]byte, error) {
		e.calls[name]++
		e.keys[name] = key
		return []byte(name + "-done"), nil
	}
}

// TestRunSteps: a run that passed its commit point, recorded steps and
// vanished is resumed by the next request, not answered NotStored:
// recorded steps return without running, the rest run, the final answer
// is stored and replayed, and the steps are deleted with it. The vanished
// run, fenced out, cannot record a step.
func TestRunSteps(t *testing.T) {
	clk := &clock{now: t0}
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: lease, Now: clk.Now}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		e := &effects{calls: map[string]int{}, keys: map[string]string{}}
		req := request("pay-1", "order 7")
		first := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		if first.Verdict != lifecycle.Claimed {
			t.Fatalf("first request: %+v", summary(first))
		}
		run := first.Run
		hctx := run.Context(ctx)
		if got, err := run.Step(hctx, "charge", e.step("charge")); err != nil || string(got) != "charge-done" {
			t.Fatalf("Step charge: %q, %v", got, err)
		}
		if !run.Commit(hctx) {
			t.Fatal("Commit refused")
		}
		if _, err := run.Step(hctx, "ship", e.step("ship")); err != nil {
			t.Fatal(err)
		}
		run.Stop() // the process dies here: no Complete, no Release

		clk.Advance(2 * lease)
		second := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		if second.Verdict != lifecycle.Claimed || second.Run.Recovered().IsZero() {
			t.Fatalf("retry of a run with steps: %+v; want Claimed, recovering", summary(second))
		}
		resumed := second.Run
		rctx := resumed.Context(ctx)
		for _, name := range []string{"charge", "ship", "mail"} {
			got, err := resumed.Step(rctx, name, e.step(name))
			if err != nil || string(got) != name+"-done" {
				t.Fatalf("resumed Step %s: %q, %v", name, got, err)
			}
		}
		want := map[string]int{"charge": 1, "ship": 1, "mail": 1}
		for name, n := range want {
			if e.calls[name] != n {
				t.Errorf("%s ran %d times; want %d", name, e.calls[name], n)
			}
			if k := lifecycle.StepKey("tenant-1", "pay-1", name); e.keys[name] != k {
				t.Errorf("%s got key %q; want %q", name, e.keys[name], k)
			}
		}

		// The vanished run wakes up: its step runs (it cannot know) but
		// is not recorded, and it learns that its lease is lost.
		if _, err := run.Step(hctx, "refund", e.step("refund")); !errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("Step of the fenced-out run: %v; want ErrLeaseLost", err)
		}
		if _, err := run.Step(hctx, "again", e.step("again")); !errors.Is(err, ledger.ErrLeaseLost) || e.calls["again"] != 0 {
			t.Errorf("Step after the run learned it lost its lease: %v, ran %d times; want ErrLeaseLost, not run", err, e.calls["again"])
		}

		resumed.Stop()
		resumed.Complete(created, "", 201, nil)
		sl := l.(lifecycle.StepLedger)
		if has, err := sl.HasSteps(ctx, req.Scope, req.Key, req.Fingerprint); has || err != nil {
			t.Errorf("steps after Complete: %v, %v; want none", has, err)
		}
		third := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		if got := summary(third); got != (verdict{Verdict: lifecycle.Replayed, Body: "paid", Event: "replayed"}) {
			t.Errorf("after the resumed run: %+v; want the replay", got)
		}
	})
}

// TestRunStepsRelease: a run released after a failure keeps its steps;
// the retry resumes after them.
func TestRunStepsRelease(t *testing.T) {
	clk := &clock{now: t0}
	eachLedger(t, ledger.Options{TTL: time.Hour, Lease: lease, Now: clk.Now}, func(t *testing.T, l lifecycle.Ledger) {
		ctx := context.Background()
		e := &effects{calls: map[string]int{}, keys: map[string]string{}}
		req := request("pay-2", "order 8")
		d := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		if _, err := d.Run.Step(ctx, "charge", e.step("charge")); err != nil {
			t.Fatal(err)
		}
		_, err := d.Run.Step(ctx, "ship", func(context.Context, string) ([]byte, error) { return nil, errors.New("carrier down") })
		if err == nil || err.Error() != "carrier down" {
			t.Fatalf("failing step: %v; want fn's error", err)
		}
		d.Run.Stop()
		d.Run.Release("failed", 503)

		d = lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		if d.Verdict != lifecycle.Claimed {
			t.Fatalf("retry after Release: %+v", summary(d))
		}
		for _, name := range []string{"charge", "ship"} {
			if _, err := d.Run.Step(ctx, name, e.step(name)); err != nil {
				t.Fatal(err)
			}
		}
		if e.calls["charge"] != 1 || e.calls["ship"] != 1 {
			t.Errorf("calls %v; want charge and ship once each", e.calls)
		}
		// Another payload under the key is refused, and sees nothing.
		if d := lifecycle.Decide(ctx, l, request("pay-2", "order 9"), lifecycle.Config{}); d.Refusal.Why != lifecycle.KeyReused {
			t.Errorf("other payload: %+v; want KeyReused", summary(d))
		}
		d.Run.Stop()
		d.Run.Complete(created, "", 201, nil)
	})
}

// TestStepTx: a database step's writes and record commit together; a
// rolled-back one leaves neither, and the retry runs it again.
func TestStepTx(t *testing.T) {
	testdb.Each(t, testStepTx[*sql.Tx], testStepTx[pgx.Tx])
}

func testStepTx[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	if _, err := d.SQL.Exec("CREATE TABLE rides (" + d.Serial + ", who TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	l := newLedger(t, d, ledger.Options{TTL: time.Hour, Lease: lease})
	req := request("ride-1", "a ride")
	dec := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
	run := dec.Run
	defer run.Stop()
	ran := 0
	insert := func(ctx context.Context, tx TTx) ([]byte, error) {
		ran++
		return nil, d.Exec(ctx, tx, "INSERT INTO rides (who) VALUES ($1)", "ann")
	}
	for _, commit := range []bool{false, true, true} {
		tx := d.Begin(t)
		if _, err := lifecycle.StepTx(ctx, run, l, tx, "ride", insert); err != nil {
			t.Fatal(err)
		}
		if commit {
			d.Commit(t, tx)
		} else {
			d.Rollback(t, tx)
			// The run took the step as recorded; a new run of the
			// operation (here: the same key, after a release) reads
			// the truth from the database.
			run.Stop()
			run.Release("rolled back", 500)
			run = lifecycle.Decide(ctx, l, req, lifecycle.Config{}).Run
		}
	}
	var rides int
	if err := d.SQL.QueryRow("SELECT count(*) FROM rides").Scan(&rides); err != nil {
		t.Fatal(err)
	}
	if rides != 1 || ran != 2 {
		t.Errorf("%d rides, the step ran %d times; want 1 ride, 2 runs (one rolled back)", rides, ran)
	}
	run.Complete(created, "", 201, nil)
	if has, err := l.HasSteps(ctx, req.Scope, req.Key, req.Fingerprint); has || err != nil {
		t.Errorf("steps after Complete: %v, %v", has, err)
	}
}
