package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// BenchmarkSteps runs a three-step request (a database step writing one
// row in the handler's transaction, two outside steps whose calls do
// nothing) against the same handler with no steps (the same write and
// calls, nothing recorded), each a first request with a new key: Decide,
// the handler, Complete. The difference is the steps' own cost: one record
// per step (the database step's rides its transaction's COMMIT on pgxv5)
// and their deletion (in Complete's statement on PostgreSQL, after it
// elsewhere); a new key's run loads no steps. On every driver whose
// database is configured, in one run of interleaved rounds;
// BENCHMARKS.md, "Steps", has the ratios.
func BenchmarkSteps(b *testing.B) {
	for _, name := range testdb.Drivers() {
		b.Run(name, func(b *testing.B) {
			if d, ok := testdb.OpenSQL(b, name); ok {
				benchSteps(b, d)
				return
			}
			if d, ok := testdb.OpenPgx(b, name); ok {
				benchSteps(b, d)
			}
		})
	}
}

func benchSteps[TTx any](b *testing.B, d *testdb.DB[TTx]) {
	if _, err := d.SQL.Exec("CREATE TABLE bench_rides (" + d.Serial + ", k VARCHAR(255) NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	l, err := ledger.New(d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	noop := func(context.Context, string) ([]byte, error) { return []byte("ok"), nil }
	handler := func(run *lifecycle.Run, steps bool) error {
		key := run.Key()
		tx, err := d.Driver.Begin(ctx)
		if err != nil {
			return err
		}
		defer d.Driver.Rollback(ctx, tx)
		ride := func(ctx context.Context, tx TTx) ([]byte, error) {
			return nil, d.Exec(ctx, tx, "INSERT INTO bench_rides (k) VALUES ($1)", key)
		}
		if steps {
			_, err = lifecycle.StepTx(ctx, run, l, tx, "ride", ride)
		} else {
			_, err = ride(ctx, tx)
		}
		if err != nil {
			return err
		}
		if err := d.Driver.Commit(ctx, tx); err != nil {
			return err
		}
		for _, name := range []string{"charge", "receipt"} {
			if steps {
				_, err = run.Step(ctx, name, noop)
			} else {
				_, err = noop(ctx, name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	fp := hash.Bytes([]byte("ride"))
	// Three rounds, each mode in turn, so that a machine whose load
	// drifts weighs on both alike (go test names the rounds none#01,
	// three#01, ...).
	for range 3 {
		benchStepsRound(b, l, fp, handler)
	}
}

func benchStepsRound[TTx any](b *testing.B, l *ledger.Ledger[TTx], fp hash.Digest, handler func(*lifecycle.Run, bool) error) {
	ctx := context.Background()
	for _, mode := range []struct {
		name  string
		steps bool
	}{{"none", false}, {"three", true}} {
		b.Run(mode.name, func(b *testing.B) {
			// Keys never seen before, also across -count's runs.
			run, i := time.Now().UnixNano(), 0
			for b.Loop() {
				i++
				req := ledger.Request{Scope: "bench", Key: fmt.Sprintf("%s-%d-%d", mode.name, run, i), Fingerprint: fp}
				dec := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
				if dec.Verdict != lifecycle.Claimed {
					b.Fatalf("verdict %v", dec.Verdict)
				}
				err := handler(dec.Run, mode.steps)
				dec.Run.Stop()
				if err != nil {
					b.Fatal(err)
				}
				dec.Run.Complete(ledger.Outcome{Kind: "ride", Status: 201}, "", 201, nil)
			}
		})
	}
}
