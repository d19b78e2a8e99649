package idemwatermill_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
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

// subscriber is what docs/consumers.md's setup needs of a Watermill subscriber:
// SubscribeInitialize declares a topic (a JetStream stream, a RabbitMQ
// queue) before anything is published to it.
type subscriber interface {
	message.Subscriber
	SubscribeInitialize(topic string) error
}

// TestREADMEPoison runs README.md's Watermill setup, with its defaults
// (consume.DefaultMaxAttempts, DefaultNackDelay), on JetStream and on its
// RabbitMQ variant, with a queue whose head is a message that always
// fails and 20 orders behind it: the poison message runs MaxAttempts
// times and goes to the dead-letter topic once, with its reason, and every
// order behind it ships. The output and dead-letter topics exist only
// because the setup declares them (SubscribeInitialize): RabbitMQ drops a
// message published to a queue nobody declared.
func TestREADMEPoison(t *testing.T) {
	for bname := range brokers(t) {
		t.Run(bname, func(t *testing.T) { testREADMEPoison(t, bname) })
	}
}

func testREADMEPoison(t *testing.T, bname string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := watermill.NopLogger{}
	orders, shipments, dead := name("orders"), name("shipments"), name("orders_dead")

	db, _ := sqlite.Open(filepath.Join(t.TempDir(), "app.db"))
	defer db.Close()
	_ = schema.Migrate(ctx, sqlite.New(db))
	if _, err := db.Exec(`CREATE TABLE shipments (order_id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	l, _ := ledger.New(sqlite.New(db), ledger.Options{})
	defer l.Close()
	c, _ := consume.New(l, consume.Options{Scope: "orders/ship"})

	var sub subscriber
	var pub message.Publisher
	var err error
	b := brokerByName(bname)
	switch bname {
	case "nats":
		url := (&natsBroker{}).urlFromEnv()
		sub, err = wmjs.NewSubscriber(wmjs.SubscriberConfig{URL: url,
			ResourceInitializer: wmjs.GroupedConsumer("ship"),
			ConsumeOptions:      []natsjs.PullConsumeOpt{natsjs.PullMaxMessages(1)}})
		if err == nil {
			pub, err = wmjs.NewPublisher(wmjs.PublisherConfig{URL: url})
		}
		for _, topic := range []string{orders, shipments, dead} {
			defer (&natsBroker{url: url}).js(t).DeleteStream(context.Background(), topic)
		}
	case "amqp":
		url := b.(*amqpBroker).url
		sub, err = wmamqp.NewSubscriber(wmamqp.NewDurableQueueConfig(url), logger)
		if err == nil {
			pub, err = wmamqp.NewPublisher(wmamqp.NewDurableQueueConfig(url), logger)
		}
		for _, topic := range []string{orders, shipments, dead} {
			defer func() {
				if ch, err := amqpChannel(url); err == nil {
					ch.QueueDelete(topic, false, false, false)
					ch.Close()
				}
			}()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, topic := range []string{orders, shipments, dead} {
		if err := sub.SubscribeInitialize(topic); err != nil { // the stream or queue named after the topic
			t.Fatal(err)
		}
	}

	var poisonRuns atomic.Int32
	router, _ := message.NewRouter(message.RouterConfig{}, logger)
	poison, _ := middleware.PoisonQueueWithFilter(pub, dead, idemwatermill.IsDeadLetter)
	router.AddMiddleware(middleware.Recoverer, poison)
	router.AddHandler("ship", orders, sub, shipments, pub,
		idemwatermill.TxHandler(c, func(msg *message.Message, tx *sql.Tx) ([]*message.Message, error) {
			if string(msg.Payload) == "poison" {
				poisonRuns.Add(1)
				return nil, errors.New("cannot parse the order")
			}
			if _, err := tx.Exec(`INSERT INTO shipments (order_id) VALUES (?)`, string(msg.Payload)); err != nil {
				return nil, err
			}
			return []*message.Message{message.NewMessage(watermill.NewUUID(), msg.Payload)}, nil
		}))
	stopped := make(chan error, 1)
	go func() { stopped <- router.Run(ctx) }()
	<-router.Running()

	msgs := []*message.Message{message.NewMessage(watermill.NewUUID(), []byte("poison"))}
	for i := range 20 {
		msgs = append(msgs, message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "order-%02d", i)))
	}
	if err := pub.Publish(orders, msgs...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "20 shipments and a dead letter", func() bool {
		return len(b.read(t, shipments)) == 20 && len(b.read(t, dead)) == 1
	})
	cancel()
	router.Close()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if n := poisonRuns.Load(); n != consume.DefaultMaxAttempts {
		t.Fatalf("the poison message ran %d times, want %d", n, consume.DefaultMaxAttempts)
	}
	dl := b.read(t, dead)
	if len(dl) != 1 || dl[0].UUID != msgs[0].UUID || dl[0].Payload != "poison" ||
		!strings.Contains(dl[0].Metadata[middleware.ReasonForPoisonedKey], "max_attempts") {
		t.Fatalf("dead letters %+v, want the poison message once, with reason max_attempts", dl)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM shipments`).Scan(&n)
	if n != 20 {
		t.Fatalf("%d shipments made, want 20", n)
	}
}
