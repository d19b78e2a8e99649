package consumers_test

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/examples/consumers"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// TestJetStream publishes two payments, then, once JetStream's duplicate
// window on the input stream (500 ms here) has passed, a copy of the
// first (a publisher's retry that JetStream no longer drops) and the
// second's ID with another order. Each payment is made once; the copy is
// acked from the record and its receipt published again with the same
// Nats-Msg-Id, which the receipts stream drops; the reused ID is
// terminated to the dead-letter subject with its reason.
func TestJetStream(t *testing.T) {
	url := brokerURL(t, "IDEMLEDGER_TEST_NATS", "nats://127.0.0.1:4222")
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, receipts, dead := name("pay"), name("receipts"), name("dead")
	streams := map[string]jetstream.Stream{}
	for _, s := range []string{in, receipts, dead} {
		cfg := jetstream.StreamConfig{Name: s, Subjects: []string{s}}
		if s == in {
			cfg.Duplicates = 500 * time.Millisecond
		}
		streams[s], err = js.CreateOrUpdateStream(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer js.DeleteStream(context.Background(), s)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, in, jetstream.ConsumerConfig{Durable: "payments", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}

	db := testdb.SQLitePool(t)
	if _, err := db.Exec(paymentsTable); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: in + "/payments"})
	if err != nil {
		t.Fatal(err)
	}
	pay := func(ctx context.Context, tx *sql.Tx, msg consume.Message) (consume.Output, error) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO payments (order_id) VALUES (?)`, string(msg.Payload)); err != nil {
			return consume.Output{}, err
		}
		return consume.Output{Publish: []consume.Outgoing{{ID: "receipt-" + msg.ID, Topic: receipts, Payload: msg.Payload}}}, nil
	}
	stopped := make(chan error)
	go func() { stopped <- consumers.ConsumeJetStream(ctx, js, cons, c, pay, dead) }()

	publish := func(id, order string) {
		t.Helper()
		m := &nats.Msg{Subject: in, Data: []byte(order), Header: nats.Header{}}
		m.Header.Set(nats.MsgIdHdr, id)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s string) uint64 {
		info, err := streams[s].Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	publish("pay-1", "order-1")
	publish("pay-2", "order-2")
	eventually(t, "two receipts", func() bool { return count(receipts) == 2 })
	time.Sleep(600 * time.Millisecond) // past the input stream's duplicate window
	publish("pay-1", "order-1")
	publish("pay-2", "order-3")
	eventually(t, "the dead letter, and every message acked", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && count(dead) == 1 && info.AckFloor.Stream == 4 && info.NumAckPending == 0
	})

	if got, want := payments(t, db), []string{"order-1", "order-2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("payments %q, want %q", got, want)
	}
	if n := count(receipts); n != 2 {
		t.Fatalf("%d receipts kept, want 2 (the republished one dropped by Nats-Msg-Id)", n)
	}
	dl, err := streams[dead].GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dl.Header.Get("Reason"), "consume: dead letter: key_reused: ledger: idempotency key reused with a different fingerprint"; got != want || string(dl.Data) != "order-3" {
		t.Fatalf("dead letter %q with reason %q, want order-3 with %q", dl.Data, got, want)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
