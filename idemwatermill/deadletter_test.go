package idemwatermill_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
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

// TestDeadLetterOnce: seven messages whose first runs passed their commit
// point and vanished (the record is left in flight with the mark, the
// lease run out), each then delivered twice (a publisher's retry), reach
// the dead-letter topic once each, with reason outcome_not_stored, and
// every delivery is acked: the copy after the first dead letter is
// answered from the record. The handler never runs.
func TestDeadLetterOnce(t *testing.T) {
	for bname, b := range brokers(t) {
		t.Run(bname, func(t *testing.T) {
			testdb.Each(t,
				func(t *testing.T, d *testdb.DB[*sql.Tx]) { testDeadLetterOnce(t, b, d) },
				func(t *testing.T, d *testdb.DB[pgx.Tx]) { testDeadLetterOnce(t, b, d) })
		})
	}
}

func testDeadLetterOnce[TTx any](t *testing.T, b broker, d *testdb.DB[TTx]) {
	ctx := context.Background()
	group, in, out, dlq := name("g"), name("in"), name("out"), name("dlq")
	b.setup(t, quiet, group, in, out, dlq)
	const lease = 200 * time.Millisecond
	l, err := ledger.New(d.Driver, ledger.Options{Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: group, NackDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	// The first runs: claimed, committed, gone.
	var sent []*message.Message
	for i := range 7 {
		m := message.NewMessage(watermill.NewUUID(), fmt.Appendf(nil, "mail-%d", i))
		req := ledger.Request{Scope: group, Key: m.UUID, Fingerprint: consume.Fingerprint(consume.Message{ID: m.UUID, Payload: m.Payload}, nil)}
		claim, err := l.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Commit(ctx, claim); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m, message.NewMessage(m.UUID, m.Payload))
	}
	time.Sleep(lease + 50*time.Millisecond)

	pub := b.publisher(t)
	poison, err := middleware.PoisonQueueWithFilter(pub, dlq, idemwatermill.IsDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	runRouter(t, b, group, in, out, func(*message.Message) ([]*message.Message, error) {
		ran.Add(1)
		return nil, nil
	}, poison, idemwatermill.Middleware(c))
	if err := pub.Publish(in, sent...); err != nil {
		t.Fatal(err)
	}
	eventually(t, "7 dead letters", func() bool { return len(b.read(t, dlq)) >= 7 })
	time.Sleep(500 * time.Millisecond) // the copies are handled, and nothing more comes
	dead := b.read(t, dlq)
	if len(dead) != 7 || len(uuids(dead)) != 7 {
		t.Fatalf("%d dead letters for %d messages, want one each of 7", len(dead), len(uuids(dead)))
	}
	for _, m := range dead {
		if got, want := m.Metadata[middleware.ReasonForPoisonedKey], "consume: dead letter: outcome_not_stored"; len(got) < len(want) || got[:len(want)] != want {
			t.Fatalf("reason %q, want %q…", got, want)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the handler ran %d times, want 0", n)
	}
}
