package consumers

import (
	"context"
	"database/sql"
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// Receipt is the value a payment stores: what a redelivery publishes
// again.
type Receipt struct {
	ID    string `json:"id"`
	Order string `json:"order"`
}

// ConsumeRabbitMQ consumes deliveries from queue until they end: each
// message inserts its payment once, in its own transaction with
// ledger.Mutate, keyed by the AMQP message-id, scoped by the queue, and
// fingerprinted by the body; the receipt stored with it is published to
// receipts after the commit, on the first delivery and on every
// redelivery, then the message is acked. A message-id reused with another
// body is rejected without requeueing (to the queue's dead-letter
// exchange); one in flight elsewhere is requeued after a pause.
func ConsumeRabbitMQ(ctx context.Context, ch *amqp.Channel, deliveries <-chan amqp.Delivery, l *ledger.Ledger[*sql.Tx], queue, receipts string) {
	db := l.Driver()
	for dv := range deliveries {
		req := ledger.Request{Scope: queue, Key: dv.MessageId, Fingerprint: hash.Bytes(dv.Body)}
		tx, err := db.Begin(ctx)
		if err != nil {
			dv.Nack(false, true)
			continue
		}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (Receipt, error) {
			order := string(dv.Body)
			if _, err := tx.ExecContext(ctx, `INSERT INTO payments (order_id) VALUES (?)`, order); err != nil {
				return Receipt{}, err
			}
			return Receipt{ID: hash.DeriveKey("receipt", dv.MessageId), Order: order}, nil
		})
		if err == nil {
			err = db.Commit(ctx, tx)
		} else {
			db.Rollback(ctx, tx)
		}
		var inFlight *ledger.InFlightError
		switch {
		case errors.Is(err, ledger.ErrKeyReused), errors.Is(err, ledger.ErrInvalidRequest):
			dv.Reject(false) // to the dead-letter exchange
			continue
		case errors.As(err, &inFlight):
			time.Sleep(min(inFlight.RetryAfter, time.Second))
			dv.Nack(false, true)
			continue
		case err != nil:
			dv.Nack(false, true)
			continue
		}
		// res.Value is the first run's receipt, on a replay too.
		err = ch.PublishWithContext(ctx, "", receipts, false, false, amqp.Publishing{
			MessageId: res.Value.ID, Body: []byte(res.Value.Order),
		})
		if err != nil {
			dv.Nack(false, true)
			continue
		}
		dv.Ack(false)
	}
}
