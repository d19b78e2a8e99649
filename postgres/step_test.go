package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
)

// TestStepTxRoundTrips: through database/sql, a database step's record
// (RecordStepTx) is one statement of its own in the caller's transaction:
// one round trip more than the same transaction without it.
func TestStepTxRoundTrips(t *testing.T) {
	_, dsn := testdb.PostgresDSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	testdb.CountWrites(&cfg.Config, &writes)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(postgres.New(db), ledger.Options{TTL: time.Hour, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	order := func(item string, record bool) int64 {
		t.Helper()
		var cl *ledger.Claim
		if record {
			if cl, err = l.Claim(ctx, ledger.Request{Scope: "s", Key: item, Fingerprint: hash.Bytes([]byte(item))}); err != nil {
				t.Fatal(err)
			}
		}
		start := writes.Load()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES ($1)", item); err != nil {
			t.Fatal(err)
		}
		if record {
			if err := l.RecordStepTx(ctx, tx, cl, "order", []byte(item)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return writes.Load() - start
	}
	for i := range 2 { // warm up: statements prepared on the connection
		order(fmt.Sprintf("warm-%d", i), true)
	}
	plain, step := order("plain", false), order("step", true)
	t.Logf("round trips: plain transaction %d, with the step's record %d", plain, step)
	if step != plain+1 {
		t.Errorf("with the step's record: %d round trips, the plain transaction %d; want 1 more", step, plain)
	}
	// The outcome and the steps' deletion: one statement, as the outcome
	// alone.
	completes := func(key string, steps bool) int64 {
		t.Helper()
		cl, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))})
		if err != nil {
			t.Fatal(err)
		}
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
}
