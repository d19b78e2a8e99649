// Package idemwatermill makes each message's effect happen once in a
// Watermill router, on any Watermill Pub/Sub (NATS JetStream, RabbitMQ,
// Kafka, SQL, ...): the contract of package consume, as a router
// middleware for handlers whose effects are outside the database (lease
// mode) and as a handler for those whose effects are all in it
// (transactional).
//
// A message's key is its UUID (consume.Options.Key may derive another),
// the scope the subscription (consume.Options.Scope), the fingerprint its
// payload and the metadata named in consume.Options.Metadata. The messages
// a handler returns are stored with its outcome: a redelivery of a handled
// message is acknowledged without running the handler, and returns those
// messages again, with their UUIDs, for the router to publish. A message
// whose first run published nothing (its process died before) has them
// published then; one whose first run did publish has them published
// twice, under the same UUIDs, for their consumers to drop (with this
// package, whose key is the UUID).
//
// Decisions reach the router as a handler's answers do:
//
//	consume.Ack         nil error and the messages to publish: the router publishes, then acks
//	consume.Nack        the error, after waiting Decision.Delay: the router nacks, the broker redelivers
//	consume.DeadLetter  a *consume.DeadLetterError: install
//	                    middleware.PoisonQueueWithFilter(pub, topic, IsDeadLetter) before
//	                    (outside) this package's middleware, so that such messages go to the
//	                    poison topic, with the reason in its "reason_poisoned" metadata, and are
//	                    acked; without it they are nacked forever
//
// On RabbitMQ (watermill-amqp's durable queue configuration) a message
// published to a queue that nobody declared is dropped: declare the
// handler's output topic and the poison topic before the router runs
// (the subscriber's SubscribeInitialize), as the setup of docs/consumers.md does.
//
// A message whose handler keeps failing before its commit point goes to
// the dead-letter path after consume.Options.MaxAttempts runs, so that it
// never holds up the messages behind it for long; a copy of a message
// already sent there is acked (one dead letter per operation).
//
// A panic of the handler releases the key (or, after Commit, stores the
// failure) and goes on: install Watermill's Recoverer outside.
package idemwatermill
