package consumers_test

import (
	"context"
	"reflect"
	"sort"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemledger/idemledger/examples/consumers"
	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// TestRabbitMQ publishes two payments, a copy of the first (RabbitMQ
// delivers it: it drops no duplicate) and the second's message-id with
// another order. Each payment is made once; the copy publishes the first
// run's receipt again, with the same message-id; the reused message-id is
// rejected to the dead-letter queue.
func TestRabbitMQ(t *testing.T) {
	url := brokerURL(t, "IDEMLEDGER_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/")
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	in, receipts, dead := name("pay"), name("receipts"), name("dead")
	for _, q := range []string{in, receipts, dead} {
		var table amqp.Table
		if q == in {
			// Rejected messages go to the dead queue.
			table = amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead}
		}
		if _, err := ch.QueueDeclare(q, false, true, false, false, table); err != nil {
			t.Fatal(err)
		}
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
	consCh, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := consCh.Consume(in, "payments", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stopped := make(chan struct{})
	go func() { defer close(stopped); consumers.ConsumeRabbitMQ(ctx, consCh, deliveries, l, in, receipts) }()

	for _, m := range []struct{ id, order string }{{"pay-1", "order-1"}, {"pay-2", "order-2"}, {"pay-1", "order-1"}, {"pay-2", "order-3"}} {
		if err := ch.PublishWithContext(ctx, "", in, false, false, amqp.Publishing{MessageId: m.id, Body: []byte(m.order)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var dl []amqp.Delivery
	eventually(t, "three receipts and a dead letter", func() bool {
		for {
			d, ok, err := ch.Get(receipts, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, d.MessageId+" "+string(d.Body))
		}
		if d, ok, _ := ch.Get(dead, true); ok {
			dl = append(dl, d)
		}
		return len(got) == 3 && len(dl) == 1
	})
	consCh.Close()
	<-stopped

	sort.Strings(got)
	r1, r2 := hash.DeriveKey("receipt", "pay-1"), hash.DeriveKey("receipt", "pay-2")
	want := []string{r1 + " order-1", r1 + " order-1", r2 + " order-2"}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("receipts %q, want %q", got, want)
	}
	if string(dl[0].Body) != "order-3" || dl[0].MessageId != "pay-2" {
		t.Fatalf("dead letter %s %q, want pay-2's order-3", dl[0].MessageId, dl[0].Body)
	}
	if got, want := payments(t, db), []string{"order-1", "order-2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("payments %q, want %q", got, want)
	}
}
