package consumers

import (
	"context"
	"database/sql"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemledger/idemledger/consume"
)

// ConsumeJetStream consumes cons with c until ctx ends: each message runs
// pay once, in a transaction of the ledger's SQLite database, keyed by its
// Nats-Msg-Id (set by the publisher; JetStream keeps it on redelivery).
// The messages it must not run go to the subject dead, with the reason in
// their Reason header, and are terminated.
func ConsumeJetStream(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, c *consume.Consumer[*sql.Tx], pay consume.TxHandler[*sql.Tx], dead string) error {
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		in := consume.Message{ID: msg.Headers().Get(nats.MsgIdHdr), Payload: msg.Data()}
		d := c.HandleTx(ctx, in, pay)
		switch d.Action {
		case consume.Ack:
			// The first run's messages, on the first delivery and on every
			// redelivery: the process may have died before it published
			// them. The same Nats-Msg-Id lets JetStream drop the copy.
			for _, o := range d.Output.Publish {
				out := &nats.Msg{Subject: o.Topic, Data: o.Payload, Header: nats.Header{}}
				out.Header.Set(nats.MsgIdHdr, o.ID)
				if _, err := js.PublishMsg(ctx, out); err != nil {
					msg.Nak() // not acked: the redelivery publishes them again
					return
				}
			}
			msg.DoubleAck(ctx)
		case consume.Nack:
			msg.NakWithDelay(d.Delay)
		case consume.DeadLetter:
			dl := &nats.Msg{Subject: dead, Data: msg.Data(), Header: nats.Header{}}
			dl.Header.Set("Reason", d.Err.Error())
			if _, err := js.PublishMsg(ctx, dl); err != nil {
				msg.Nak()
				return
			}
			msg.Term()
		}
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}
