// Package consume makes each message's effect happen once, whatever the
// broker redelivers: the idempotent-consumer pattern on the ledger, for
// any broker (NATS JetStream, RabbitMQ, Kafka, SQS, a job queue). It
// imports no broker: an adapter (such as the idemwatermill module's
// middleware) turns a delivery into a [Message], calls a [Consumer], and
// carries out the [Decision] it returns: acknowledge, negatively
// acknowledge after a delay, or send to the dead-letter path.
//
// A message is a request. Its key is the message's ID by default
// ([Options].Key may derive one, from a business ID with hash.DeriveKey
// say), its scope the subscription ([Options].Scope), its fingerprint the
// payload and the metadata named in [Options].Metadata.
//
// There are two forms, as for HTTP.
//
// [Consumer.HandleTx], for a handler whose effects are all writes in the
// ledger's database: the handler gets a transaction of that database, and
// its writes, its [Output] and the ledger's record commit together
// (ledger.MutateOutcomeCommit); only then is the message acknowledged. A crash
// at any point leaves either all of it or none of it.
//
// [Consumer.Handle], lease mode, for effects outside the database (an
// e-mail, a payment API): the key is claimed and held under a lease that a
// heartbeat extends while the handler runs; [Commit] marks the commit
// point, after which a failure is stored rather than retried. The
// handler's context is cancelled, with a cause matching
// ledger.ErrLeaseLost, when the lease runs out with no extension confirmed
// (the store locked or unreachable for a whole lease) or is found taken
// over, and Commit then returns false: just before the effect, check
// whether context.Cause(ctx) matches ledger.ErrLeaseLost, and return an
// error there (the key goes back, and the redelivery runs or replays the
// run that owns it).
//
// # Rules
//
//	delivery                                        decision
//	first delivery, handler succeeds                Ack, with the handler's Output
//	redelivery of a completed message               Ack, Replayed, the stored Output (handler not run)
//	the same message still being handled elsewhere  Nack after a delay (never run twice at once)
//	handler error before the commit point           Nack: the key is released, the failure counted, a redelivery runs again
//	the handler failed on Options.MaxAttempts runs  DeadLetter(ReasonMaxAttempts), stored (store failures never count)
//	handler error after the commit point (Handle)   DeadLetter(ReasonFailed): stored, never run again
//	a copy of a message sent to the dead-letter     Ack, Replayed: one dead letter per operation
//	path by an earlier delivery
//	same ID, another payload                        DeadLetter(ReasonKeyReused), not run
//	committed, then the process died (Handle)       DeadLetter(ReasonOutcomeNotStored), not run
//	a key the ledger refuses (no message ID, or an  DeadLetter(ReasonInvalidKey), not run
//	ID too long or not printable ASCII: Options.Key)
//	the ledger's store fails                        Nack after a delay
//	the delivery's context has ended (shutdown)     Nack, no delay, nothing run
//
// The Output holds what the first run produced: its result and the
// messages it publishes ([Outgoing]). The adapter publishes them before it
// acknowledges, on the first delivery and on every redelivery alike: a
// first run whose publication or acknowledgement was lost (the process
// died in between) loses neither, since the redelivery is answered from
// the record. Outgoing messages therefore reach the broker at least once,
// with the IDs the first run gave them, so that their own consumers (or
// the broker's publish deduplication, such as JetStream's Nats-Msg-Id)
// drop the copies.
//
// # Events
//
// [Options].Observer receives ledger events: Claimed and Stored for a
// message handled, Replayed for a redelivery answered from the record
// (and for one refused because its first run died after the commit
// point), InFlight, Released (with Reason error or panic), KeyReused for a
// message sent to the dead-letter path because its ID came with another
// payload, and the store's failures. Route is [Options].Name and Method
// is [EventMethod]; an event never holds the key or the scope.
package consume
