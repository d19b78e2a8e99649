package idemwatermill_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/internal/testdb"
)

// BenchmarkJetStream measures messages per second through a Watermill
// router on NATS JetStream, one message at a time (the subscriber acks each
// before the next), on SQLite and PostgreSQL (database/sql): the bare
// handler (the same business insert in its own transaction, no ledger)
// against TxHandler and Middleware on first deliveries, and on
// redeliveries of messages already handled (answered from the record).
// The messages are published before the clock starts; it stops when the
// last one has been handled. Run it with -benchtime=Nx (N messages); see
// BENCHMARKS.md.
func BenchmarkJetStream(b *testing.B) {
	url := os.Getenv(NATSEnv)
	if url == "" {
		b.Skipf("set %s to run it", NATSEnv)
	}
	br := &natsBroker{url: url}
	for _, drv := range []string{testdb.SQLite, testdb.Postgres} {
		for _, kind := range []string{"bare", "TxHandler/first", "TxHandler/redelivery", "Middleware/first", "Middleware/redelivery"} {
			b.Run(drv+"/"+kind, func(b *testing.B) {
				d, _ := testdb.OpenSQL(b, drv)
				benchJetStream(b, br, d, kind)
			})
		}
	}
}

func benchJetStream(b *testing.B, br broker, d *testdb.DB[*sql.Tx], kind string) {
	group, in, out := name("g"), name("in"), name("out")
	br.setup(b, quiet, group, in, out)
	c := newConsumer(b, d, group)
	insert := testdb.Rebind(d.Engine, `INSERT INTO effects (id, note) VALUES (?, ?)`)
	msgs := make([]*message.Message, b.N)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "payload %d", i))
	}
	ctx := context.Background()
	var h message.HandlerFunc
	var mws []message.HandlerMiddleware
	switch kind {
	case "bare":
		h = func(msg *message.Message) ([]*message.Message, error) {
			tx, err := d.SQL.BeginTx(ctx, nil)
			if err != nil {
				return nil, err
			}
			defer tx.Rollback()
			if _, err := tx.Exec(insert, msg.UUID, string(msg.Payload)); err != nil {
				return nil, err
			}
			return nil, tx.Commit()
		}
	case "TxHandler/first", "TxHandler/redelivery":
		h = idemwatermill.TxHandler(c, func(msg *message.Message, tx *sql.Tx) ([]*message.Message, error) {
			_, err := tx.Exec(insert, msg.UUID, string(msg.Payload))
			return nil, err
		})
	case "Middleware/first", "Middleware/redelivery":
		mws = append(mws, idemwatermill.Middleware(c))
		h = func(msg *message.Message) ([]*message.Message, error) {
			_, err := d.SQL.Exec(insert, msg.UUID, string(msg.Payload))
			return nil, err
		}
	}
	if kind == "TxHandler/redelivery" || kind == "Middleware/redelivery" {
		// The first deliveries, handled before the clock starts.
		for _, m := range msgs {
			var dec consume.Decision
			if kind == "TxHandler/redelivery" {
				dec = c.HandleTx(ctx, consume.Message{ID: m.UUID, Payload: m.Payload}, func(ctx context.Context, tx *sql.Tx, _ consume.Message) (consume.Output, error) {
					_, err := tx.ExecContext(ctx, insert, m.UUID, string(m.Payload))
					return consume.Output{}, err
				})
			} else {
				dec = c.Handle(ctx, consume.Message{ID: m.UUID, Payload: m.Payload}, func(context.Context, consume.Message) (consume.Output, error) {
					return consume.Output{}, nil
				})
			}
			if dec.Action != consume.Ack {
				b.Fatal(dec.Err)
			}
		}
	}
	var handled atomic.Int64
	all := make(chan struct{})
	count := func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := h(msg)
			if err == nil && handled.Add(1) == int64(b.N) {
				close(all)
			}
			return out, err
		}
	}
	if err := br.publisher(b).Publish(in, msgs...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	runRouter(b, br, group, in, out, h, append([]message.HandlerMiddleware{count}, mws...)...)
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d messages handled", handled.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
