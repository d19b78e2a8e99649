package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/internal/redact"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// DefaultNackDelay is [Options.NackDelay] when it is left 0.
const DefaultNackDelay = time.Second

// DefaultMaxAttempts is [Options.MaxAttempts] when it is left 0. A broker
// such as RabbitMQ puts a nacked message back at the head of its queue,
// so every failed run of a message holds up the messages behind it for
// about NackDelay: five runs bound that to seconds per poison message
// with the default delay, and still give a failure of a moment (a
// downstream service restarting, a deadlock) four more runs spread over
// those seconds. Raise it with NackDelay for handlers whose failures last
// longer; failures of the ledger's store never count.
const DefaultMaxAttempts = 5

// EventMethod is the Method of every event a Consumer reports.
const EventMethod = "consume"

// Options configures a Consumer.
type Options struct {
	// Scope names the subscription (a queue, a durable consumer, a
	// consumer group): the same message delivered to two subscriptions is
	// two operations, one per scope. It must be acceptable to
	// [ledger.CheckScope]; New refuses it otherwise.
	Scope string
	// Key returns the idempotency key of msg; nil means msg.ID. Derive
	// one from a business identity with hash.DeriveKey when the same
	// operation may come in several messages with different IDs. An error
	// sends the message to the dead-letter path ([ReasonInvalidKey]), and so
	// does a key the ledger refuses (empty, longer than its MaxKeyLength,
	// 255 bytes by default, or not printable ASCII): a broker whose IDs
	// may be any text (an AMQP message-id) needs a Key that maps them into
	// that alphabet, e.g. hash.DeriveKey of the ID.
	Key func(msg Message) (string, error)
	// Metadata names the metadata entries that are part of the
	// fingerprint with the payload (see Fingerprint). Name only what a
	// redelivery keeps: a broker's delivery count or timestamp differs
	// from one delivery to the next, and would make every redelivery a
	// reused key.
	Metadata []string
	// NackDelay is the longest [Decision.Delay] asked for: the wait after a
	// handler error or a store failure, and the cap of the wait for a
	// message in flight elsewhere (the rest of that run's lease, when
	// shorter). Default [DefaultNackDelay]; negative is refused by New.
	NackDelay time.Duration
	// MaxAttempts is the retry budget: the most runs a message gets whose
	// handler fails (returns an error, or panics in Handle) before its
	// commit point. Each such failure is counted on the message's record
	// ([ledger.Ledger.Release], [ledger.Claim.Failures]); the run that fails
	// for the MaxAttempts-th time sends the message to the dead-letter
	// path ([ReasonMaxAttempts]) instead of giving it back, and so does a
	// delivery that finds the budget spent, without running the handler.
	// Failures of the ledger's store, a lost lease and a shutdown are not
	// the handler's and never count. Default [DefaultMaxAttempts]; negative
	// is refused by New.
	MaxAttempts int
	// Recover lets a delivery run a message whose earlier run passed its
	// commit point and vanished, once its lease ran out, knowing it
	// (Recovered), instead of sending it to the dead-letter path with
	// [ReasonOutcomeNotStored] (see [ledger.Request.Recover]). Handle only.
	Recover bool
	// Name is the Route of every event (a topic or handler name); never
	// put a message's ID here.
	Name string
	// Observer receives the events of every delivery; nil means none.
	Observer ledger.Observer
}

// Consumer decides what becomes of each delivered message, with the
// ledger l. It is safe for concurrent use by multiple goroutines; it does
// not own l.
type Consumer[TTx any] struct {
	l    *ledger.Ledger[TTx]
	opts Options
}

// New returns a Consumer on l. It returns an error wrapping
// [ErrInvalidOptions] when l is nil, when opts.Scope is refused by
// [ledger.CheckScope], or when opts.NackDelay or opts.MaxAttempts is
// negative.
func New[TTx any](l *ledger.Ledger[TTx], opts Options) (*Consumer[TTx], error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil ledger", ErrInvalidOptions)
	}
	if err := ledger.CheckScope(opts.Scope); err != nil {
		return nil, fmt.Errorf("%w: scope: %w", ErrInvalidOptions, err)
	}
	if opts.NackDelay < 0 {
		return nil, fmt.Errorf("%w: NackDelay %v is negative", ErrInvalidOptions, opts.NackDelay)
	}
	if opts.NackDelay == 0 {
		opts.NackDelay = DefaultNackDelay
	}
	if opts.MaxAttempts < 0 {
		return nil, fmt.Errorf("%w: MaxAttempts %d is negative", ErrInvalidOptions, opts.MaxAttempts)
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	return &Consumer[TTx]{l: l, opts: opts}, nil
}

// Ledger returns the consumer's ledger.
func (c *Consumer[TTx]) Ledger() *ledger.Ledger[TTx] { return c.l }

// delivery is one message on its way through the contract.
type delivery struct {
	req   ledger.Request
	start time.Time
}

// prepare makes msg's request, or returns the dead-letter Decision of a
// key that cannot be had.
func (c *Consumer[TTx]) prepare(msg Message) (*delivery, *Decision) {
	start := time.Now()
	key := msg.ID
	if c.opts.Key != nil {
		k, err := c.opts.Key(msg)
		if err != nil {
			d := deadLetter(ReasonInvalidKey, fmt.Errorf("consume: key: %w", err))
			return nil, &d
		}
		key = k
	}
	if key == "" {
		d := deadLetter(ReasonInvalidKey, errors.New("consume: the message has no ID"))
		return nil, &d
	}
	req := ledger.Request{Scope: c.opts.Scope, Key: key, Fingerprint: Fingerprint(msg, c.opts.Metadata), Recover: c.opts.Recover}
	return &delivery{req: req, start: start}, nil
}

// refuse answers a delivery that does not run: d is a lifecycle decision
// that is neither Claimed nor Replayed.
func (c *Consumer[TTx]) refuse(ctx context.Context, dv *delivery, d lifecycle.Decision) Decision {
	ref := d.Refusal
	switch ref.Why {
	case lifecycle.InFlight:
		c.emit(ctx, dv, d.Event)
		return nack(min(ref.RetryAfter, c.opts.NackDelay), ref.Err)
	case lifecycle.KeyReused:
		c.emit(ctx, dv, d.Event)
		return deadLetter(ReasonKeyReused, ledger.ErrKeyReused)
	case lifecycle.NotStored:
		d.Event.Err = ledger.ErrCommitted
		c.emit(ctx, dv, d.Event)
		if !ref.First {
			// The delivery that settled the record sent it to the
			// dead-letter path: one dead letter per operation, however
			// many copies of the message come.
			return Decision{Action: Ack, Output: &Output{}, Replayed: true}
		}
		return deadLetter(ReasonOutcomeNotStored, ledger.ErrCommitted)
	case lifecycle.Invalid:
		return deadLetter(ReasonInvalidKey, redact.Error(ref.Err, dv.req.Key, dv.req.Scope))
	case lifecycle.Canceled:
		// The adapter is shutting down: nothing failed, and the broker
		// redelivers the message to whoever consumes next.
		return nack(0, ref.Err)
	}
	c.emit(ctx, dv, d.Event)
	return nack(c.opts.NackDelay, ref.Err)
}

// replay answers a redelivery from the stored outcome out.
func (c *Consumer[TTx]) replay(ctx context.Context, dv *delivery, out ledger.Outcome) Decision {
	if out.Kind == lifecycle.KindNotStored {
		// A run past its commit point vanished, and the delivery that
		// settled its record sent it to the dead-letter path.
		c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReplayed, Err: ledger.ErrCommitted})
		return Decision{Action: Ack, Output: &Output{}, Replayed: true}
	}
	s, err := decodeOutcome(out)
	if err != nil {
		return deadLetter(ReasonStoredOutcome, err)
	}
	c.emit(ctx, dv, ledger.Event{Kind: ledger.EventReplayed})
	switch {
	case s.DeadLetter != "":
		// Sent to the dead-letter path by the delivery that stored
		// this: one dead letter per operation, however many copies of
		// the message come.
		return Decision{Action: Ack, Output: &s.Output, Replayed: true}
	case s.Failure != "":
		// Stored before dead letters were recorded: sent again.
		return deadLetter(ReasonFailed, &FailedError{Message: s.Failure})
	}
	return Decision{Action: Ack, Output: &s.Output, Replayed: true}
}

// giveUp stores on claim's record that its message went to the dead-letter
// path for why, with cause's text, so that later copies are acknowledged
// (replay). Should storing fail, a later copy is sent there again.
func (c *Consumer[TTx]) giveUp(ctx context.Context, dv *delivery, claim *ledger.Claim, why Reason, cause error) {
	out, err := deadLetterOutcome(why, cause)
	if err == nil {
		err = c.l.Complete(context.WithoutCancel(ctx), claim, out)
	}
	if err != nil {
		c.emit(ctx, dv, ledger.Event{Kind: lifecycle.FailureKind(err), Op: "complete", Err: err})
		return
	}
	c.emit(ctx, dv, ledger.Event{Kind: ledger.EventStored, Reason: ledger.ReasonError, Err: cause})
}

// emit reports e to the Observer, with Method, Route and Duration set and
// the key and scope blotted out of Err.
func (c *Consumer[TTx]) emit(ctx context.Context, dv *delivery, e ledger.Event) {
	if c.opts.Observer == nil {
		return
	}
	e.Method, e.Route, e.Transport = EventMethod, c.opts.Name, ledger.TransportMessage
	e.Duration = time.Since(dv.start)
	if e.Err != nil {
		e.Err = redact.Error(e.Err, dv.req.Key, dv.req.Scope)
	}
	c.opts.Observer.Observe(ctx, e)
}
