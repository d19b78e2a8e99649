package idemwatermill

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/idemledger/idemledger/consume"
)

// Middleware returns a router middleware that runs each message's handler
// at most once per key with the Consumer c, in lease mode
// (consume.Consumer.Handle): the key is claimed and its lease extended
// while the handler runs; the handler's messages are stored with the
// outcome when it returns no error; its error releases the key, unless it
// called Commit before, and the message is nacked (dead-lettered once its
// failures reach consume.Options.MaxAttempts). See the package doc for
// how decisions reach the router. The handler's message carries the run
// in its context: call Commit(msg) right after an effect that must not be
// made twice.
//
// It panics when c is nil. The middleware is safe for concurrent use.
func Middleware[TTx any](c *consume.Consumer[TTx]) message.HandlerMiddleware {
	if c == nil {
		panic("idemwatermill: Middleware needs a consumer")
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			var produced []*message.Message
			d := c.Handle(msg.Context(), incoming(msg), func(ctx context.Context, _ consume.Message) (consume.Output, error) {
				orig := msg.Context()
				msg.SetContext(ctx)
				defer msg.SetContext(orig)
				var err error
				produced, err = h(msg)
				if err != nil {
					return consume.Output{}, err
				}
				return output(produced), nil
			})
			return answer(msg, d, produced)
		}
	}
}

// TxHandlerFunc handles a message whose effects are all writes through tx,
// a transaction of the ledger's database. It must leave tx open and write
// nothing through the pool tx came from; it returns the messages to
// publish, or an error to have its writes rolled back and the message
// redelivered.
type TxHandlerFunc[TTx any] func(msg *message.Message, tx TTx) ([]*message.Message, error)

// TxHandler returns a router handler that runs fn at most once per key
// with the Consumer c, inside a transaction of the ledger's database
// (consume.Consumer.HandleTx): fn's writes, the messages it returns and
// the record of the message commit together, before the router publishes
// and acks. See the package doc for how decisions reach the router.
//
// It panics when c or fn is nil. The handler is safe for concurrent use.
func TxHandler[TTx any](c *consume.Consumer[TTx], fn TxHandlerFunc[TTx]) message.HandlerFunc {
	if c == nil || fn == nil {
		panic("idemwatermill: TxHandler needs a consumer and a function")
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		var produced []*message.Message
		d := c.HandleTx(msg.Context(), incoming(msg), func(ctx context.Context, tx TTx, _ consume.Message) (consume.Output, error) {
			var err error
			produced, err = fn(msg, tx)
			if err != nil {
				return consume.Output{}, err
			}
			return output(produced), nil
		})
		return answer(msg, d, produced)
	}
}

// Commit marks the commit point of the message msg, inside a handler
// under Middleware (see consume.Commit): a failure or panic after it is
// stored and the message goes to the dead-letter path instead of running
// again. It reports whether msg is being handled under Middleware.
func Commit(msg *message.Message) bool { return consume.Commit(msg.Context()) }

// IsDeadLetter reports whether err, a handler's error, sends the message
// to the dead-letter path: the filter of middleware.PoisonQueueWithFilter.
func IsDeadLetter(err error) bool { return errors.Is(err, consume.ErrDeadLetter) }

// incoming is msg as the contract sees it; the metadata map is shared,
// read only.
func incoming(msg *message.Message) consume.Message {
	return consume.Message{ID: msg.UUID, Payload: msg.Payload, Metadata: msg.Metadata}
}

// output is the Output that stores the messages a handler produced.
func output(produced []*message.Message) consume.Output {
	var out consume.Output
	for _, m := range produced {
		out.Publish = append(out.Publish, consume.Outgoing{ID: m.UUID, Payload: m.Payload, Metadata: m.Metadata})
	}
	return out
}

// answer turns d into the router's answer: the messages to publish (the
// handler's own on the first run, remade from the record on a replay), or
// the error to nack with, after d.Delay, or to dead-letter with.
func answer(msg *message.Message, d consume.Decision, produced []*message.Message) ([]*message.Message, error) {
	switch d.Action {
	case consume.Ack:
		if !d.Replayed {
			return produced, nil
		}
		msgs := make([]*message.Message, 0, len(d.Output.Publish))
		for _, o := range d.Output.Publish {
			m := message.NewMessage(o.ID, o.Payload)
			for k, v := range o.Metadata {
				m.Metadata.Set(k, v)
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	case consume.Nack:
		wait(msg.Context(), d.Delay)
	}
	return nil, d.Err
}

// wait sleeps for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
