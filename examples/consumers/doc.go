// Package consumers shows, in tested code, a NATS JetStream consumer and a
// RabbitMQ consumer whose effects happen once per message however often
// the broker delivers it, without Watermill:
//
//   - JetStream (nats.go's jetstream API) through package consume: the
//     handler's writes, its Output and the message's record commit in one
//     transaction (Consumer.HandleTx); the Decision says ack, nak with a
//     delay, or term to the dead-letter subject; the Output's messages are
//     published, with their IDs as Nats-Msg-Id, before the ack, also on a
//     redelivery, so JetStream's duplicate window drops a copy whose first
//     publication did get through.
//   - RabbitMQ (amqp091-go) with ledger.Mutate alone: begin, Mutate keyed
//     by the message-id, commit, publish the stored receipt, ack; a
//     reused message-id is rejected to the queue's dead-letter exchange.
//
// Their tests run against the brokers named by IDEMLEDGER_TEST_NATS and
// IDEMLEDGER_TEST_AMQP, and skip without them.
package consumers
