package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/ledger"
)

// order is the business value of the Mutate tests.
type order struct {
	ID   int64  `json:"id"`
	Item string `json:"item"`
}

// placeOrder returns the fn of Mutate that inserts one order through tx.
func placeOrder[TTx any](b *bundle[TTx], tx TTx, item string, runs *int) func(context.Context) (order, error) {
	return func(ctx context.Context) (order, error) {
		if runs != nil {
			*runs++
		}
		id, err := b.insertOrder(ctx, tx, item)
		if err != nil {
			return order{}, err
		}
		return order{ID: id, Item: item}, nil
	}
}

// inTx runs f in a transaction of the driver and commits it.
func (b *bundle[TTx]) inTx(t *testing.T, f func(tx TTx)) {
	t.Helper()
	tx := b.begin(t)
	defer b.l.Driver().Rollback(b.ctx, tx)
	f(tx)
	b.commit(t, tx)
}

func TestMutateFirstAndReplay(t *testing.T) {
	eachDriver(t, testMutateFirstAndReplay[*sql.Tx], testMutateFirstAndReplay[pgx.Tx])
}

func testMutateFirstAndReplay[TTx any](t *testing.T, b *bundle[TTx]) {
	runs := 0
	var first ledger.Result[order]
	b.inTx(t, func(tx TTx) {
		var err error
		first, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
		if err != nil {
			t.Fatal(err)
		}
	})
	if first != (ledger.Result[order]{Value: order{ID: 1, Item: "book"}, Fence: 1}) {
		t.Errorf("first = %+v", first)
	}
	r := b.get(t, "k")
	if r.State != ledger.StateCompleted || r.Outcome.Kind != "value" || r.Outcome.Status != 0 || r.Outcome.Header != nil || string(r.Outcome.Body) != `{"id":1,"item":"book"}` {
		t.Errorf("stored %v %+v", r.State, r.Outcome)
	}
	b.inTx(t, func(tx TTx) {
		again, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
		if err != nil {
			t.Fatal(err)
		}
		if again != (ledger.Result[order]{Value: order{ID: 1, Item: "book"}, Replayed: true, Fence: 1}) {
			t.Errorf("replay = %+v", again)
		}
		_, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "other"), placeOrder(b, tx, "pen", &runs))
		if err != ledger.ErrKeyReused {
			t.Errorf("different payload = %v, want ErrKeyReused", err)
		}
	})
	if runs != 1 || b.count(t, "orders") != 1 {
		t.Errorf("fn ran %d times, %d orders; want 1, 1", runs, b.count(t, "orders"))
	}
	// After the TTL the key runs afresh.
	b.clock.Advance(time.Hour)
	b.inTx(t, func(tx TTx) {
		res, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
		if err != nil {
			t.Fatal(err)
		}
		if res != (ledger.Result[order]{Value: order{ID: 2, Item: "book"}, Fence: 2}) {
			t.Errorf("after TTL = %+v", res)
		}
	})
}

func TestMutateFnError(t *testing.T) {
	eachDriver(t, testMutateFnError[*sql.Tx], testMutateFnError[pgx.Tx])
}

func testMutateFnError[TTx any](t *testing.T, b *bundle[TTx]) {
	boom := errors.New("card declined")
	b.inTx(t, func(tx TTx) {
		_, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(ctx context.Context) (order, error) {
			if _, err := placeOrder(b, tx, "book", nil)(ctx); err != nil {
				return order{}, err
			}
			return order{}, fmt.Errorf("charge: %w", boom)
		})
		if !errors.Is(err, boom) || err.Error() != "charge: card declined" {
			t.Fatalf("Mutate = %v, want fn's error unchanged", err)
		}
		// The transaction is still usable: its own write survives.
		if err := b.exec(b.ctx, tx, "INSERT INTO orders (item) VALUES ('outside')"); err != nil {
			t.Fatalf("tx unusable after fn error: %v", err)
		}
	})
	if n := b.count(t, "idempotency_ledger"); n != 0 {
		t.Errorf("%d ledger rows after fn error, want 0", n)
	}
	var items []string
	rows, _ := b.db.Query("SELECT item FROM orders")
	for rows.Next() {
		var s string
		rows.Scan(&s)
		items = append(items, s)
	}
	rows.Close()
	if fmt.Sprint(items) != "[outside]" {
		t.Errorf("orders = %q, want only [outside]", items)
	}
	// A retry runs fn.
	b.inTx(t, func(tx TTx) {
		res, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", nil))
		if err != nil || res.Replayed || res.Fence != 1 {
			t.Fatalf("retry = %+v, %v", res, err)
		}
	})
}

func TestMutatePanic(t *testing.T) { eachDriver(t, testMutatePanic[*sql.Tx], testMutatePanic[pgx.Tx]) }

func testMutatePanic[TTx any](t *testing.T, b *bundle[TTx]) {
	b.inTx(t, func(tx TTx) {
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("recovered %v, want the original panic", p)
				}
			}()
			ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(ctx context.Context) (order, error) {
				placeOrder(b, tx, "book", nil)(ctx)
				panic("boom")
			})
			t.Error("Mutate returned after a panic")
		}()
		if err := b.exec(b.ctx, tx, "INSERT INTO orders (item) VALUES ('after')"); err != nil {
			t.Fatalf("tx unusable after panic: %v", err)
		}
	})
	if n := b.count(t, "idempotency_ledger"); n != 0 {
		t.Errorf("%d ledger rows after panic, want 0", n)
	}
	if n := b.count(t, "orders"); n != 1 {
		t.Errorf("%d orders after panic, want 1 (the caller's own)", n)
	}
}

func TestMutateNested(t *testing.T) {
	eachDriver(t, testMutateNested[*sql.Tx], testMutateNested[pgx.Tx])
}

func testMutateNested[TTx any](t *testing.T, b *bundle[TTx]) {
	b.inTx(t, func(tx TTx) {
		outer, err := ledger.Mutate(b.ctx, b.l, tx, req("outer", "p"), func(ctx context.Context) (string, error) {
			inner, err := ledger.Mutate(ctx, b.l, tx, req("inner", "p"), placeOrder(b, tx, "inner", nil))
			if err != nil {
				return "", err
			}
			// A failing nested Mutate undoes only itself.
			_, err = ledger.Mutate(ctx, b.l, tx, req("inner-fails", "p"), func(ctx context.Context) (order, error) {
				placeOrder(b, tx, "lost", nil)(ctx)
				return order{}, errors.New("no")
			})
			if err == nil || err.Error() != "no" {
				return "", fmt.Errorf("failing inner Mutate = %v", err)
			}
			// Same key again inside: a replay.
			again, err := ledger.Mutate(ctx, b.l, tx, req("inner", "p"), placeOrder(b, tx, "inner", nil))
			if err != nil || !again.Replayed || again.Value != inner.Value {
				return "", fmt.Errorf("nested replay = %+v, %v", again, err)
			}
			return fmt.Sprintf("order %d", inner.Value.ID), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if outer.Value != "order 1" {
			t.Errorf("outer = %+v", outer)
		}
	})
	if got := b.keys(t); fmt.Sprint(got) != "[inner outer]" {
		t.Errorf("ledger keys = %q, want [inner outer]", got)
	}
	if n := b.count(t, "orders"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

func TestMutateCallerRollback(t *testing.T) {
	eachDriver(t, testMutateCallerRollback[*sql.Tx], testMutateCallerRollback[pgx.Tx])
}

func testMutateCallerRollback[TTx any](t *testing.T, b *bundle[TTx]) {
	tx, err := b.l.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", nil)); err != nil {
		t.Fatal(err)
	}
	if err := b.l.Driver().Rollback(b.ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 0 || m != 0 {
		t.Fatalf("after rollback: %d ledger rows, %d orders; want 0, 0", n, m)
	}
	runs := 0
	b.inTx(t, func(tx TTx) {
		res, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "book", &runs))
		if err != nil || res.Replayed || runs != 1 {
			t.Fatalf("retry after rollback = %+v, %v, runs %d", res, err, runs)
		}
	})
}

// TestMutateFnEndsTx: fn must leave tx open. One that commits or rolls it
// back gets an error that says so, wrapping sql.ErrTxDone; a commit has
// made the claim durable in flight, a rollback has left nothing.
func TestMutateFnEndsTx(t *testing.T) {
	eachDriver(t, testMutateFnEndsTx[*sql.Tx], testMutateFnEndsTx[pgx.Tx])
}

func testMutateFnEndsTx[TTx any](t *testing.T, b0 *bundle[TTx]) {
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			b := b0
			if end == "rollback" {
				b = setupOn(t, freshLike(t, b0.d))
			}
			tx, err := b.l.Driver().Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer b.l.Driver().Rollback(b.ctx, tx)
			_, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(ctx context.Context) (order, error) {
				o, err := placeOrder(b, tx, "book", nil)(ctx)
				if err != nil {
					return o, err
				}
				if end == "commit" {
					return o, b.l.Driver().Commit(b.ctx, tx)
				}
				return o, b.l.Driver().Rollback(b.ctx, tx)
			})
			const want = "ledger: mutate: fn ended the transaction; it must leave tx open: sql: transaction has already been committed or rolled back"
			if !errors.Is(err, sql.ErrTxDone) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("%s in fn: Mutate error %v; want one starting %q", end, err, want)
			}
			wantRows := 0
			if end == "commit" {
				wantRows = 1
			}
			if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != wantRows || m != wantRows {
				t.Fatalf("%s in fn: %d ledger rows, %d orders; want %d of each", end, n, m, wantRows)
			}
			if end == "commit" {
				r, err := b.l.Get(b.ctx, "tenant-1", "k")
				if err != nil || r.State != ledger.StateInFlight {
					t.Fatalf("commit in fn: record %+v, %v; want in flight", r, err)
				}
			}
		})
	}
}

// TestMutateWaitsForDuplicate runs a duplicate in another transaction while
// the first is still inside fn: it must wait, then replay.
func TestMutateWaitsForDuplicate(t *testing.T) {
	eachDriver(t, testMutateWaitsForDuplicate[*sql.Tx], testMutateWaitsForDuplicate[pgx.Tx])
}

func testMutateWaitsForDuplicate[TTx any](t *testing.T, b *bundle[TTx]) {
	finishFirst := b.holdFirst(nil)
	second := make(chan ledger.Result[order], 1)
	secondErr := make(chan error, 1)
	go func() {
		tx, err := b.l.Driver().Begin(b.ctx) // waits for the first's write lock
		if err != nil {
			secondErr <- err
			return
		}
		defer b.l.Driver().Rollback(b.ctx, tx)
		res, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "second", nil))
		if err == nil {
			err = b.l.Driver().Commit(b.ctx, tx)
		}
		second <- res
		secondErr <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the duplicate reach BEGIN
	if err := finishFirst(); err != nil {
		t.Fatal(err)
	}
	if err := <-secondErr; err != nil {
		t.Fatal(err)
	}
	if res := <-second; res != (ledger.Result[order]{Value: order{ID: 1, Item: "first"}, Replayed: true, Fence: 1}) {
		t.Errorf("duplicate = %+v", res)
	}
	if n := b.count(t, "orders"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

// holdFirst starts, in a transaction of its own begun with opts, a Mutate
// of key "k" that places the order "first", and returns once it is inside
// fn, holding the claim. finish lets fn go on and returns the error of the
// Mutate or of its commit.
func (b *bundle[TTx]) holdFirst(begin func() (TTx, error)) (finish func() error) {
	if begin == nil {
		begin = func() (TTx, error) { return b.l.Driver().Begin(b.ctx) }
	}
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		tx, err := begin()
		if err != nil {
			close(inside)
			done <- err
			return
		}
		defer b.l.Driver().Rollback(b.ctx, tx)
		_, err = ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), func(ctx context.Context) (order, error) {
			close(inside)
			<-release
			return placeOrder(b, tx, "first", nil)(ctx)
		})
		if err == nil {
			err = b.l.Driver().Commit(b.ctx, tx)
		}
		done <- err
	}()
	<-inside
	return func() error {
		close(release)
		return <-done
	}
}

// TestMutateInFlightLease: a key held in lease mode is in flight for Mutate.
func TestMutateInFlightLease(t *testing.T) {
	eachDriver(t, testMutateInFlightLease[*sql.Tx], testMutateInFlightLease[pgx.Tx])
}

func testMutateInFlightLease[TTx any](t *testing.T, b *bundle[TTx]) {
	b.claim(t, req("k", "p"))
	b.clock.Advance(20 * time.Second)
	b.inTx(t, func(tx TTx) {
		_, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "x", nil))
		var inflight *ledger.InFlightError
		if !errors.As(err, &inflight) || inflight.RetryAfter != 40*time.Second {
			t.Errorf("Mutate = %v, want in flight for 40s", err)
		}
	})
}

func TestMutateUndecodableReplay(t *testing.T) {
	eachDriver(t, testMutateUndecodableReplay[*sql.Tx], testMutateUndecodableReplay[pgx.Tx])
}

func testMutateUndecodableReplay[TTx any](t *testing.T, b *bundle[TTx]) {
	c := b.claim(t, req("k", "p"))
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Kind: ledger.KindValue, Body: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	b.inTx(t, func(tx TTx) {
		_, err := ledger.Mutate(b.ctx, b.l, tx, req("k", "p"), placeOrder(b, tx, "x", nil))
		if err == nil || err.Error() != "ledger: mutate: decode stored value: invalid character 'o' in literal null (expecting 'u')" {
			t.Errorf("Mutate = %v", err)
		}
	})
}

// oneWay encodes to JSON but has no way back: its MarshalJSON writes a
// string, and an int field cannot hold it.
type oneWay struct{ N int }

func (o oneWay) MarshalJSON() ([]byte, error) { return []byte(`"n"`), nil }

// TestMutateValueMustDecode: a value whose JSON does not decode back into
// T fails the first execution, which leaves nothing behind, instead of
// being stored for every replay to fail on.
func TestMutateValueMustDecode(t *testing.T) {
	eachDriver(t, testMutateValueMustDecode[*sql.Tx], testMutateValueMustDecode[pgx.Tx])
}

func testMutateValueMustDecode[TTx any](t *testing.T, b *bundle[TTx]) {
	tests := []struct {
		name string
		run  func(tx TTx) error
		want string
	}{
		{"error interface", func(tx TTx) error {
			_, err := ledger.Mutate(b.ctx, b.l, tx, req("k1", "p"), func(ctx context.Context) (error, error) {
				_, err := b.insertOrder(ctx, tx, "x")
				return errors.New("declined"), err
			})
			return err
		}, "ledger: mutate: value of type *errors.errorString does not decode from its own JSON: json: cannot unmarshal object into Go value of type error"},
		{"one-way MarshalJSON", func(tx TTx) error {
			_, err := ledger.Mutate(b.ctx, b.l, tx, req("k2", "p"), func(ctx context.Context) (oneWay, error) {
				_, err := b.insertOrder(ctx, tx, "x")
				return oneWay{N: 1}, err
			})
			return err
		}, "ledger: mutate: value of type ledger_test.oneWay does not decode from its own JSON: json: cannot unmarshal string into Go value of type ledger_test.oneWay"},
	}
	for _, tt := range tests {
		for attempt := range 2 {
			b.inTx(t, func(tx TTx) {
				if err := tt.run(tx); err == nil || err.Error() != tt.want {
					t.Errorf("%s, attempt %d: Mutate = %v; want %s", tt.name, attempt+1, err, tt.want)
				}
			})
		}
	}
	if n, m := b.count(t, "idempotency_ledger"), b.count(t, "orders"); n != 0 || m != 0 {
		t.Fatalf("%d ledger rows, %d orders; want none", n, m)
	}
}
