package consume_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// A run whose lease another claim took over (a new token and fence, as a
// redelivery's takeover writes them) hears of it through its context,
// cancelled with ledger.ErrLeaseLost as its cause, before it makes its
// effect; Commit returns false.
func TestLeaseLostCancelsHandler(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testLeaseLost(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testLeaseLost(t, d) })
}

func testLeaseLost[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	l, err := ledger.New(d.Driver, ledger.Options{Lease: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := consume.New(l, consume.Options{Scope: "orders-sub"})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	type seen struct {
		cause     error
		committed bool
	}
	got := make(chan seen, 1)
	effect := false
	decided := make(chan consume.Decision, 1)
	go func() {
		decided <- c.Handle(context.Background(), order, func(ctx context.Context, m consume.Message) (consume.Output, error) {
			close(started)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				effect = true
				return shipped, nil
			}
			got <- seen{cause: context.Cause(ctx), committed: consume.Commit(ctx)}
			return consume.Output{}, ctx.Err()
		})
	}()
	<-started
	steal := "UPDATE idempotency_ledger SET lease_token = 'taken', fence = fence + 1 WHERE state = 'in_flight'"
	if _, err := d.SQL.Exec(steal); err != nil {
		t.Fatal(err)
	}
	<-decided
	if effect {
		t.Fatal("the handler made its effect after its lease was taken over")
	}
	s := <-got
	if !errors.Is(s.cause, ledger.ErrLeaseLost) {
		t.Fatalf("handler's context ended with cause %v, want ledger.ErrLeaseLost", s.cause)
	}
	if s.committed {
		t.Error("Commit returned true after the lease was taken over")
	}
}
