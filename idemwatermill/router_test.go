package idemwatermill_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

const effectsTable = `CREATE TABLE effects (id VARCHAR(255) PRIMARY KEY, note TEXT NOT NULL)`

// newConsumer adds the effects table to d and returns a Consumer for the
// subscription group, nacking after 100 ms.
func newConsumer[TTx any](t testing.TB, d *testdb.DB[TTx], group string) *consume.Consumer[TTx] {
	t.Helper()
	if _, err := d.SQL.Exec(effectsTable); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d.Driver, ledger.Options{Lease: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := consume.New(l, consume.Options{Scope: group, NackDelay: 100 * time.Millisecond, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func countEffects(t testing.TB, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM effects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// txExec runs a business write through tx, whichever driver's it is.
func txExec(ctx context.Context, tx any, query string, args ...any) error {
	switch tx := tx.(type) {
	case *sql.Tx:
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	case pgx.Tx:
		_, err := tx.Exec(ctx, query, args...)
		return err
	}
	return fmt.Errorf("unknown transaction %T", tx)
}

// done is the message a handler publishes for msg.
func done(msg *message.Message) *message.Message {
	return message.NewMessage(watermill.NewUUID(), []byte("done:"+string(msg.Payload)))
}

// TestRouter runs a router on each broker, with each form, on each driver,
// with Watermill's Duplicator running every handler twice and the poison
// queue taking dead letters. The publisher sends four messages, a copy of
// the first (a publisher's retry: same UUID, same payload) and a message
// with the second's UUID and another payload. Each effect happens once;
// each delivery publishes the first run's messages, with their UUIDs (the
// Duplicator's second run and the copy's delivery are replays); the
// reused UUID goes to the poison queue with its reason.
func TestRouter(t *testing.T) {
	for bname, b := range brokers(t) {
		for _, form := range []string{"TxHandler", "Middleware"} {
			t.Run(bname+"/"+form, func(t *testing.T) {
				testdb.Each(t,
					func(t *testing.T, d *testdb.DB[*sql.Tx]) { testRouter(t, b, form, d) },
					func(t *testing.T, d *testdb.DB[pgx.Tx]) { testRouter(t, b, form, d) })
			})
		}
	}
}

func testRouter[TTx any](t *testing.T, b broker, form string, d *testdb.DB[TTx]) {
	group, in, out, dlq := name("g"), name("in"), name("out"), name("dlq")
	b.setup(t, quiet, group, in, out, dlq)
	c := newConsumer(t, d, group)
	pub := b.publisher(t)
	poison, err := middleware.PoisonQueueWithFilter(pub, dlq, idemwatermill.IsDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	var h message.HandlerFunc
	mws := []message.HandlerMiddleware{poison, middleware.Duplicator}
	switch form {
	case "TxHandler":
		h = idemwatermill.TxHandler(c, func(msg *message.Message, tx TTx) ([]*message.Message, error) {
			if err := d.Exec(msg.Context(), tx, `INSERT INTO effects (id, note) VALUES ($1, $2)`, msg.UUID, string(msg.Payload)); err != nil {
				return nil, err
			}
			return []*message.Message{done(msg)}, nil
		})
	case "Middleware":
		mws = append(mws, idemwatermill.Middleware(c))
		h = func(msg *message.Message) ([]*message.Message, error) {
			_, err := d.SQL.Exec(testdb.Rebind(d.Engine, `INSERT INTO effects (id, note) VALUES (?, ?)`), msg.UUID, string(msg.Payload))
			if err != nil {
				return nil, err
			}
			idemwatermill.Commit(msg)
			return []*message.Message{done(msg)}, nil
		}
	}
	runRouter(t, b, group, in, out, h, mws...)

	var sent []*message.Message
	for i := range 4 {
		sent = append(sent, message.NewMessage(watermill.NewUUID(), []byte(fmt.Sprintf("p%d", i))))
	}
	retry := message.NewMessage(sent[0].UUID, []byte("p0"))
	reused := message.NewMessage(sent[1].UUID, []byte("other"))
	if err := pub.Publish(in, append(sent, retry, reused)...); err != nil {
		t.Fatal(err)
	}

	// 4 messages and the retry, each published twice by the Duplicator.
	eventually(t, "10 published messages and 1 dead letter", func() bool {
		return len(b.read(t, out)) >= 10 && len(b.read(t, dlq)) >= 1
	})
	time.Sleep(200 * time.Millisecond) // nothing more comes
	outs := b.read(t, out)
	if len(outs) != 10 {
		t.Fatalf("%d messages published, want 10", len(outs))
	}
	byUUID := map[string][]string{}
	for _, m := range outs {
		byUUID[m.UUID] = append(byUUID[m.UUID], m.Payload)
	}
	var payloads []string
	for _, ps := range byUUID {
		want := ps[0]
		for _, p := range ps {
			if p != want {
				t.Fatalf("one UUID published with payloads %q", ps)
			}
		}
		payloads = append(payloads, fmt.Sprintf("%s x%d", want, len(ps)))
	}
	sortStrings(payloads)
	if want := []string{"done:p0 x4", "done:p1 x2", "done:p2 x2", "done:p3 x2"}; !reflect.DeepEqual(payloads, want) {
		t.Fatalf("published %q, want %q", payloads, want)
	}
	dead := b.read(t, dlq)
	if len(dead) != 1 || dead[0].UUID != sent[1].UUID || dead[0].Payload != "other" ||
		dead[0].Metadata[middleware.ReasonForPoisonedKey] != "consume: dead letter: key_reused: ledger: idempotency key reused with a different fingerprint" {
		t.Fatalf("dead letters %+v, want the reused UUID's with its reason", dead)
	}
	if n := countEffects(t, d.SQL); n != 4 {
		t.Fatalf("%d effects, want 4", n)
	}
}
