package idemwatermill_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// TestREADME runs the JetStream consumer of README.md's section Consumers
// as it is written there (topics renamed apart, the logger silent): an
// order published twice (same UUID) ships once, and both deliveries
// publish the same shipment; the order's UUID with another payload goes
// to the dead-letter topic.
func TestREADME(t *testing.T) {
	if _, ok := brokers(t)["nats"]; !ok {
		t.Skipf("set %s to run it", NATSEnv)
	}
	url := (&natsBroker{}).urlFromEnv()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := watermill.NopLogger{}
	orders, shipments, dead := name("orders"), name("shipments"), name("orders_dead")

	db, _ := sqlite.Open(filepath.Join(t.TempDir(), "app.db")) // WAL, busy_timeout, immediate transactions
	defer db.Close()
	_ = schema.Migrate(ctx, sqlite.New(db)) // the ledger's table
	if _, err := db.Exec(`CREATE TABLE shipments (order_id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	l, _ := ledger.New(sqlite.New(db), ledger.Options{})
	c, _ := consume.New(l, consume.Options{Scope: "orders/ship"}) // scope = the subscription

	sub, _ := wmjs.NewSubscriber(wmjs.SubscriberConfig{URL: url,
		ResourceInitializer: wmjs.GroupedConsumer("ship"), // one durable consumer, shared by every process
		ConsumeOptions:      []natsjs.PullConsumeOpt{natsjs.PullMaxMessages(1)}})
	pub, _ := wmjs.NewPublisher(wmjs.PublisherConfig{URL: url})
	for _, topic := range []string{orders, shipments, dead} {
		if err := sub.SubscribeInitialize(topic); err != nil { // the stream named after the topic
			t.Fatal(err)
		}
		defer (&natsBroker{url: url}).js(t).DeleteStream(context.Background(), topic)
	}

	router, _ := message.NewRouter(message.RouterConfig{}, logger)
	poison, _ := middleware.PoisonQueueWithFilter(pub, dead, idemwatermill.IsDeadLetter)
	router.AddMiddleware(middleware.Recoverer, poison) // dead letters: reason in "reason_poisoned"
	router.AddHandler("ship", orders, sub, shipments, pub,
		idemwatermill.TxHandler(c, func(msg *message.Message, tx *sql.Tx) ([]*message.Message, error) {
			if _, err := tx.Exec(`INSERT INTO shipments (order_id) VALUES (?)`, string(msg.Payload)); err != nil {
				return nil, err // rolled back, nacked, redelivered, run again
			}
			return []*message.Message{message.NewMessage(watermill.NewUUID(), msg.Payload)}, nil
		}))
	stopped := make(chan error)
	go func() { stopped <- router.Run(ctx) }()
	<-router.Running()

	order := message.NewMessage(watermill.NewUUID(), []byte("order-42"))
	if err := pub.Publish(orders, order, message.NewMessage(order.UUID, order.Payload), message.NewMessage(order.UUID, []byte("order-43"))); err != nil {
		t.Fatal(err)
	}
	b := &natsBroker{url: url}
	eventually(t, "two shipments and a dead letter", func() bool {
		return len(b.read(t, shipments)) == 2 && len(b.read(t, dead)) == 1
	})
	ships := b.read(t, shipments)
	if ships[0].UUID != ships[1].UUID || ships[0].Payload != "order-42" || ships[1].Payload != "order-42" {
		t.Fatalf("shipments %+v, want one shipment published twice", ships)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM shipments`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d shipments made, want 1", n)
	}
	cancel()
	router.Close()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	l.Close()
}
