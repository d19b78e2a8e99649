package idemwatermill_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// The environment variables that name the brokers of the tests; .ci/run
// sets both. A test of a broker whose variable is unset skips.
const (
	NATSEnv = "IDEMLEDGER_TEST_NATS" // nats://127.0.0.1:4222
	AMQPEnv = "IDEMLEDGER_TEST_AMQP" // amqp://guest:guest@127.0.0.1:5672/
)

// got is a message read back from a topic.
type got struct {
	UUID, Payload string
	Metadata      map[string]string
}

// broker is a real broker reached through Watermill's adapter for it,
// plus its own client for setting topics up and reading them back.
type broker interface {
	// setup makes each topic exist (a stream, a queue), and the
	// subscription group of in, removed when the test ends. A message
	// delivered and not acked is delivered again after redeliver (on
	// JetStream, the consumer's AckWait; RabbitMQ redelivers when the
	// consumer's connection closes, and ignores it).
	setup(t testing.TB, redeliver time.Duration, group, in string, topics ...string)
	publisher(t testing.TB) message.Publisher
	subscriber(t testing.TB, group string) message.Subscriber
	// read returns every message published to topic so far.
	read(t testing.TB, topic string) []got
}

var logger = watermill.NopLogger{}

// brokers returns the brokers whose variables are set, by name; it skips
// the test when none is.
func brokers(t testing.TB) map[string]broker {
	t.Helper()
	bs := map[string]broker{}
	if url := os.Getenv(NATSEnv); url != "" {
		bs["nats"] = &natsBroker{url: url}
	} else {
		t.Logf("NATS JetStream tests skipped: set %s (for example nats://127.0.0.1:4222) to run them", NATSEnv)
	}
	if url := os.Getenv(AMQPEnv); url != "" {
		bs["amqp"] = &amqpBroker{url: url, seen: map[string][]got{}}
	} else {
		t.Logf("RabbitMQ tests skipped: set %s (for example amqp://guest:guest@127.0.0.1:5672/) to run them", AMQPEnv)
	}
	if len(bs) == 0 {
		t.Skipf("no broker: set %s and/or %s", NATSEnv, AMQPEnv)
	}
	return bs
}

func brokerByName(name string) broker {
	switch name {
	case "nats":
		return &natsBroker{url: os.Getenv(NATSEnv)}
	case "amqp":
		return &amqpBroker{url: os.Getenv(AMQPEnv), seen: map[string][]got{}}
	}
	panic("no broker " + name)
}

// names returns a fresh topic name with prefix, safe as a JetStream
// stream name and an AMQP queue name.
func name(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// natsBroker is NATS JetStream through watermill-nats/v2's jetstream
// package. A topic is a stream of one subject; the subscription group is
// a durable consumer (watermill__group__topic) with the ack wait asked
// for. Subscribers pull one message at a time: watermill-nats v2.1.3's
// jetstream subscriber can panic ("send on closed channel") when a message
// reaches it while it closes, and messages prefetched past their ack wait
// are redelivered to it, sooner or later during a close.
type natsBroker struct{ url string }

func (b *natsBroker) urlFromEnv() string { return os.Getenv(NATSEnv) }

func (b *natsBroker) js(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(b.url)
	if err != nil {
		t.Fatalf("%s=%s: %v", NATSEnv, b.url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func (b *natsBroker) setup(t testing.TB, redeliver time.Duration, group, in string, topics ...string) {
	t.Helper()
	js := b.js(t)
	ctx := context.Background()
	for _, topic := range append([]string{in}, topics...) {
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: topic, Subjects: []string{topic}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { js.DeleteStream(context.Background(), topic) })
	}
	_, err := js.CreateOrUpdateConsumer(ctx, in, jetstream.ConsumerConfig{
		Durable: "watermill__" + group + "__" + in, AckPolicy: jetstream.AckExplicitPolicy, AckWait: redeliver,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *natsBroker) publisher(t testing.TB) message.Publisher {
	t.Helper()
	p, err := wmnats.NewPublisher(wmnats.PublisherConfig{URL: b.url, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (b *natsBroker) subscriber(t testing.TB, group string) message.Subscriber {
	t.Helper()
	s, err := wmnats.NewSubscriber(wmnats.SubscriberConfig{URL: b.url, Logger: logger,
		ResourceInitializer: wmnats.ExistingConsumer(nil, group),
		ConsumeOptions:      []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(1)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (b *natsBroker) read(t testing.TB, topic string) []got {
	t.Helper()
	ctx := context.Background()
	st, err := b.js(t).Stream(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []got
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		g := got{Payload: string(m.Data), Metadata: map[string]string{}}
		for k := range m.Header {
			g.Metadata[k] = m.Header.Get(k)
		}
		g.UUID = g.Metadata["_watermill_message_uuid"]
		msgs = append(msgs, g)
	}
	return msgs
}

// amqpBroker is RabbitMQ through watermill-amqp/v3's durable queue
// configuration: a topic is a durable queue of the same name, which every
// subscriber shares (the group is the queue). read takes the messages off
// the queue with amqp091-go and keeps them.
type amqpBroker struct {
	url  string
	mu   sync.Mutex
	seen map[string][]got
}

func (b *amqpBroker) channel(t testing.TB) *amqp091.Channel {
	t.Helper()
	conn, err := amqp091.Dial(b.url)
	if err != nil {
		t.Fatalf("%s=%s: %v", AMQPEnv, b.url, err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func (b *amqpBroker) setup(t testing.TB, _ time.Duration, _, in string, topics ...string) {
	t.Helper()
	ch := b.channel(t)
	for _, topic := range append([]string{in}, topics...) {
		if _, err := ch.QueueDeclare(topic, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if ch, err := amqpChannel(b.url); err == nil {
				ch.QueueDelete(topic, false, false, false)
				ch.Close()
			}
		})
	}
}

func amqpChannel(url string) (*amqp091.Channel, error) {
	conn, err := amqp091.Dial(url)
	if err != nil {
		return nil, err
	}
	return conn.Channel()
}

func (b *amqpBroker) publisher(t testing.TB) message.Publisher {
	t.Helper()
	p, err := wmamqp.NewPublisher(wmamqp.NewDurableQueueConfig(b.url), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (b *amqpBroker) subscriber(t testing.TB, _ string) message.Subscriber {
	t.Helper()
	s, err := wmamqp.NewSubscriber(wmamqp.NewDurableQueueConfig(b.url), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (b *amqpBroker) read(t testing.TB, topic string) []got {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := b.channel(t)
	for {
		d, ok, err := ch.Get(topic, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		g := got{Payload: string(d.Body), Metadata: map[string]string{}}
		for k, v := range d.Headers {
			if s, ok := v.(string); ok {
				g.Metadata[k] = s
			}
		}
		g.UUID = g.Metadata["_watermill_message_uuid"]
		b.seen[topic] = append(b.seen[topic], g)
	}
	return append([]got(nil), b.seen[topic]...)
}

// The ack waits of the tests: long where nothing should be redelivered
// (a redelivery then would only be noise), short where a killed consumer's
// message must come back quickly.
const (
	quiet  = 30 * time.Second
	prompt = time.Second
)

// eventually polls cond every 20 ms until it holds or 15 s have passed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a loaded CI machine shares its cores with the brokers
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uuids returns the sorted distinct UUIDs of msgs.
func uuids(msgs []got) []string {
	set := map[string]bool{}
	for _, m := range msgs {
		set[m.UUID] = true
	}
	var out []string
	for u := range set {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// runRouter runs a router with one handler from in to out, through the
// middlewares in order (the first outermost), until the test ends.
func runRouter(t testing.TB, b broker, group, in, out string, h message.HandlerFunc, mws ...message.HandlerMiddleware) {
	t.Helper()
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 3 * time.Second}, logger)
	if err != nil {
		t.Fatal(err)
	}
	r.AddMiddleware(mws...)
	r.AddHandler("h", in, b.subscriber(t, group), out, b.publisher(t), h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			t.Errorf("router: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); r.Close(); <-done })
	select {
	case <-r.Running():
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}
}

func sortStrings(s []string) { sort.Strings(s) }
