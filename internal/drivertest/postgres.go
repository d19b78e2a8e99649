package drivertest

import (
	"context"
	"testing"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
)

// SerializationFailure makes a PostgreSQL serialization failure of a
// driver statement: two REPEATABLE READ transactions read one record, the
// first extends its lease and commits, and the second's Extend of the same
// row fails with SQLSTATE 40001 (PostgreSQL documentation, 13.2.2). It
// returns that error: what a PostgreSQL driver passes to [Hooks.Retryable].
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
