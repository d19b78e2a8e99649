package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
)

// SerializationFailure makes a PostgreSQL serialization failure of a
// driver statement: two REPEATABLE READ transactions read one record, the
// first extends its lease and commits, and the second's Extend of the same
// row fails with SQLSTATE 40001 (PostgreSQL documentation, 13.2.2). It
// returns that error: what a PostgreSQL driver passes to Hooks.Retryable.
func SerializationFailure[TTx any](t *testing.T, d *testdb.DB[TTx]) error {
	ctx := context.Background()
	must(d.Driver.DB().Claim(ctx, claimParams("k", "tok", t0)))(t)
	lease := driver.ExtendParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: "k", Token: "tok", Fence: 1}, LeaseMillis: 1000, Now: t0}
	a, b := d.Begin(t), d.Begin(t)
	defer d.Driver.Rollback(ctx, a)
	defer d.Driver.Rollback(ctx, b)
	for _, tx := range []TTx{a, b} {
		if err := d.Exec(ctx, tx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			t.Fatal(err)
		}
		must(d.Driver.TxExecutor(tx).Get(ctx, driver.GetParams{Scope: "s", Key: "k", Now: t0}))(t)
	}
	if _, ok, err := d.Driver.TxExecutor(a).Extend(ctx, lease); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := d.Driver.Commit(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, _, err := d.Driver.TxExecutor(b).Extend(ctx, lease)
	return err
}

// PurgeCommitsAsync checks a PostgreSQL driver's purge batch: the
// transaction that ran PurgeBatch commits without waiting for its WAL to
// be flushed (synchronous_commit off), and that setting ends with the
// transaction: the next transaction on the same connection waits for its
// flush again, as every request must (no session state left behind a
// transaction pooler either).
func PurgeCommitsAsync[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	const setting = `SELECT CASE current_setting('synchronous_commit') WHEN 'off' THEN 0 ELSE 1 END`
	must(d.Driver.DB().Claim(ctx, claimParams("k", "tok", t0)))(t)
	tx := d.Begin(t)
	defer d.Driver.Rollback(ctx, tx) // a failed check must not leave it open: the schema's drop would wait for it
	pid := must(d.QueryInt(ctx, tx, "SELECT pg_backend_pid()"))(t)
	if sync := must(d.QueryInt(ctx, tx, setting))(t); sync != 1 {
		t.Fatal("synchronous_commit is off before the purge: the test proves nothing")
	}
	// The claim's TTL has passed, so the batch deletes it; the setting
	// must hold whether or not a batch deletes anything.
	for _, now := range []int64{t0 + 20_000, t0 + 20_001} {
		must(d.Driver.TxExecutor(tx).PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: 10}))(t)
		if sync := must(d.QueryInt(ctx, tx, setting))(t); sync != 0 {
			t.Fatalf("after a purge batch at %d, synchronous_commit is not off in its transaction", now)
		}
	}
	d.Commit(t, tx)
	// The pool hands the connection back out (it is idle, the most
	// recently used); try a few times in case it does not at once.
	for range 20 {
		tx := d.Begin(t)
		same, err := d.QueryInt(ctx, tx, "SELECT pg_backend_pid()")
		sync, err2 := d.QueryInt(ctx, tx, setting)
		d.Rollback(t, tx)
		if err = errors.Join(err, err2); err != nil {
			t.Fatal(err)
		}
		if same == pid {
			if sync != 1 {
				t.Fatal("synchronous_commit stayed off on the connection after the purge's transaction")
			}
			return
		}
	}
	t.Fatal("the pool never handed the purge's connection out again: nothing checked after the purge")
}
