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
)

// TestStep: a message whose handler charged (a recorded step), passed its
// commit point and vanished is resumed by its redelivery, instead of
// going to the dead-letter path: the charge is not made again, the
// shipment is, and the message is acked with the final output. A
// redelivery after a failure that released the key resumes the same way.
func TestStep(t *testing.T) {
	testdb.Each(t, testStep[*sql.Tx], testStep[pgx.Tx])
}

func testStep[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	b := setupOn(t, d, consume.Options{})
	calls := map[string]int{}
	step := func(name string) func(context.Context, string) ([]byte, error) {
		return func(context.Context, string) ([]byte, error) {
			calls[name]++
			return []byte(name), nil
		}
	}
	errCarrier := errors.New("carrier down")
	handler := func(commit bool, stop error) consume.Handler {
		return func(ctx context.Context, msg consume.Message) (consume.Output, error) {
			if _, err := consume.Step(ctx, "charge", step("charge")); err != nil {
				return consume.Output{}, err
			}
			if commit && !consume.Commit(ctx) {
				return consume.Output{}, errors.New("commit refused")
			}
			if stop != nil {
				return consume.Output{}, stop
			}
			ship, err := consume.Step(ctx, "ship", step("ship"))
			return consume.Output{Result: ship}, err
		}
	}
	// A failure before the commit point: released, redelivered, resumed.
	msg := consume.Message{ID: "m-1", Payload: []byte("order 1")}
	if got := b.c.Handle(b.ctx, msg, handler(false, errCarrier)); got.Action != consume.Nack {
		t.Fatalf("failed delivery: %+v; want Nack", got)
	}
	if got := b.c.Handle(b.ctx, msg, handler(false, nil)); got.Action != consume.Ack || string(got.Output.Result) != "ship" {
		t.Fatalf("redelivery: %+v; want Ack with the shipment", got)
	}
	// A crash after the commit point: the handler's process stops
	// (here: its run is left in flight by a handler that never returns
	// before the lease runs out, played by a second consumer).
	msg = consume.Message{ID: "m-2", Payload: []byte("order 2")}
	crashed := make(chan struct{})
	release := make(chan struct{})
	go b.c.Handle(b.ctx, msg, func(ctx context.Context, msg consume.Message) (consume.Output, error) {
		if _, err := consume.Step(ctx, "charge", step("charge")); err != nil {
			return consume.Output{}, err
		}
		consume.Commit(ctx)
		close(crashed)
		<-release
		return consume.Output{}, errors.New("gone")
	})
	<-crashed
	b.clock.Advance(2 * time.Minute)
	got := b.c.Handle(b.ctx, msg, handler(true, nil))
	close(release)
	if got.Action != consume.Ack || string(got.Output.Result) != "ship" {
		t.Fatalf("redelivery after the crash: %+v; want Ack with the shipment, not the dead-letter path", got)
	}
	if calls["charge"] != 2 || calls["ship"] != 2 {
		t.Errorf("calls = %v; want one charge and one shipment per message", calls)
	}
}
