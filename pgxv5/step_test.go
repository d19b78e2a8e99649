package pgxv5_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
)

// TestStepTxRoundTrips: a database step's record (RecordStepTx) in the
// driver's own transaction travels with its COMMIT, so a transaction that
// inserts an order and records its step takes the round trips of the same
// transaction without the record; with a Tracer, where nothing is batched,
// it takes one more. A record whose lease was lost meanwhile stops the
// COMMIT: the order is not kept, the error matches ledger.ErrLeaseLost,
// and the connection serves the next transaction.
func TestStepTxRoundTrips(t *testing.T) {
	for _, c := range []struct {
		mode   pgx.QueryExecMode
		traced bool
		extra  int64
	}{
		{pgx.QueryExecModeCacheStatement, false, 0},
		{pgx.QueryExecModeExec, false, 0},
		{pgx.QueryExecModeSimpleProtocol, false, 0},
		{pgx.QueryExecModeCacheStatement, true, 1},
	} {
		name := c.mode.String()
		if c.traced {
			name += "/traced"
		}
		t.Run(name, func(t *testing.T) {
			skipUnpooled(t, c.mode)
			ctx := context.Background()
			pool, writes := commitPool(t, c.mode, c.traced)
			d := pgxv5.New(pool)
			l, err := ledger.New(d, ledger.Options{TTL: time.Hour, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			claim := func(key string) *ledger.Claim {
				t.Helper()
				cl, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))})
				if err != nil {
					t.Fatal(err)
				}
				return cl
			}
			// order runs one transaction that inserts item and, with a
			// claim, records the step "order" under it; it returns the
			// error of the record or the commit, and the round trips.
			order := func(item string, cl *ledger.Claim) (error, int64) {
				t.Helper()
				start := writes.Load()
				tx, err := d.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Rollback(ctx, tx)
				if _, err := tx.Exec(ctx, "INSERT INTO orders (item) VALUES ($1)", item); err != nil {
					t.Fatal(err)
				}
				if cl != nil {
					if err := l.RecordStepTx(ctx, tx, cl, "order", []byte(item)); err != nil {
						return err, writes.Load() - start
					}
				}
				return d.Commit(ctx, tx), writes.Load() - start
			}
			// Warm up: statements prepared, descriptions cached.
			for i := range 2 {
				if err, _ := order(fmt.Sprintf("warm-%d", i), claim(fmt.Sprintf("warm-%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			plainErr, plain := order("plain", nil)
			cl := claim("k")
			stepErr, step := order("first", cl)
			if plainErr != nil || stepErr != nil || step != plain+c.extra {
				t.Errorf("plain transaction: %v in %d round trips; with the step's record: %v in %d; want %d more", plainErr, plain, stepErr, step, c.extra)
			}
			got, err := l.Steps(ctx, cl)
			if err != nil || len(got) != 1 || string(got["order"]) != "first" {
				t.Errorf("Steps = %q, %v; want order = first", got, err)
			}

			// The record alone: BEGIN travels with it too.
			cl = claim("alone")
			start := writes.Load()
			tx, err := d.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = l.RecordStepTx(ctx, tx, cl, "order", []byte("alone"))
			if err == nil {
				err = d.Commit(ctx, tx)
			}
			if n, want := writes.Load()-start, 1+2*c.extra; err != nil || n != want {
				t.Errorf("a transaction holding the record alone: %v in %d round trips; want %d", err, n, want)
			}

			// A record under a fence taken over meanwhile.
			cl = claim("stale")
			if _, err := pool.Exec(ctx, "UPDATE idempotency_ledger SET fence = fence + 1 WHERE key = 'stale'"); err != nil {
				t.Fatal(err)
			}
			err, _ = order("stale", cl)
			if !errors.Is(err, ledger.ErrLeaseLost) {
				t.Errorf("record under a stale fence: %v; want ledger.ErrLeaseLost", err)
			}
			var orders, steps int
			if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM orders WHERE item = 'stale'), (SELECT count(*) FROM idempotency_steps WHERE key = 'stale')").Scan(&orders, &steps); err != nil {
				t.Fatal(err)
			}
			if orders != 0 || steps != 0 {
				t.Errorf("after the refused record: %d orders and %d steps kept; want none", orders, steps)
			}
			if err, _ := order("after", nil); err != nil {
				t.Errorf("a transaction after the refused record: %v", err)
			}

			// The outcome and the steps' deletion: one statement, as the
			// outcome alone.
			completes := func(key string, steps bool) int64 {
				t.Helper()
				cl := claim(key)
				if err := l.RecordStep(ctx, cl, "a", nil); err != nil {
					t.Fatal(err)
				}
				start := writes.Load()
				if steps {
					if forgot, err := l.CompleteSteps(ctx, cl, ledger.Outcome{Status: 201}); err != nil || !forgot {
						t.Fatalf("CompleteSteps: %v, %v", forgot, err)
					}
				} else if err := l.Complete(ctx, cl, ledger.Outcome{Status: 201}); err != nil {
					t.Fatal(err)
				}
				return writes.Load() - start
			}
			completes("warm-complete", false)
			completes("warm-complete-steps", true)
			if alone, with := completes("complete", false), completes("complete-steps", true); alone != 1 || with != 1 {
				t.Errorf("Complete: %d round trips, CompleteSteps: %d; want 1 each", alone, with)
			}

			// A COMMIT that fails for another reason (the orders table's
			// deferred unique check) keeps neither.
			cl = claim("dup")
			err, _ = order("bad", cl)
			if err == nil || errors.Is(err, ledger.ErrLeaseLost) {
				t.Errorf("a commit failing its deferred check: %v", err)
			}
			if got, err := l.Steps(ctx, cl); err != nil || len(got) != 0 {
				t.Errorf("Steps after the failed commit = %q, %v; want none", got, err)
			}
		})
	}
}

// TestStepTxQueuedBeforeMutateCommit: a step record queued in a
// transaction that MutateOutcomeCommit then commits is not dropped: the
// COMMIT that ends the transaction carries it.
func TestStepTxQueuedBeforeMutateCommit(t *testing.T) {
	ctx := context.Background()
	// exec batches too, and works behind a transaction pooler, where the
	// prepared statements of the default mode do not.
	pool, writes := commitPool(t, pgx.QueryExecModeExec, false)
	d := pgxv5.New(pool)
	l, err := ledger.New(d, ledger.Options{TTL: time.Hour, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cl, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: "step", Fingerprint: hash.Bytes([]byte("step"))})
	if err != nil {
		t.Fatal(err)
	}
	res, err, _ := commitOnce(t, d, l, writes, "mutate", "m1", "mutate", func(tx pgx.Tx) {
		if err := l.RecordStepTx(ctx, tx, cl, "order", []byte("m1")); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil || res.Replayed {
		t.Fatalf("MutateOutcomeCommit: %+v, %v", res, err)
	}
	got, err := l.Steps(ctx, cl)
	if err != nil || len(got) != 1 || string(got["order"]) != "m1" {
		t.Errorf("Steps = %q, %v; want order = m1", got, err)
	}
}
