package consume

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// Message is a delivered message as the contract sees it. The adapter
// fills it from the broker's delivery; Consumer keeps no reference to it
// after the call returns.
type Message struct {
	// ID is the message's identity, the same on every redelivery and on
	// every copy that a publisher's retry made: Watermill's UUID,
	// JetStream's Nats-Msg-Id, AMQP's message-id. It is the key unless
	// [Options.Key] derives one.
	ID string
	// Payload is the message's body, part of the fingerprint.
	Payload []byte
	// Metadata holds the message's headers; those named in
	// [Options.Metadata] are part of the fingerprint, the others are only
	// passed to the handler.
	Metadata map[string]string
}

// Outgoing is a message that a handler publishes as part of its effect.
// It is stored with the handler's Output, and published again on every
// redelivery of the message that produced it.
type Outgoing struct {
	// ID identifies the outgoing message, the same on every publication:
	// give it one (a UUID, or [hash.DeriveKey] of the incoming ID and an
	// index) so that its consumers can drop the copies.
	ID string `json:"id"`
	// Topic is where to publish it; empty means the adapter's default
	// (Watermill's handler publish topic).
	Topic    string            `json:"topic,omitempty"`
	Payload  []byte            `json:"payload,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Output is what a handler's run produced: stored with the record and
// given back, equal, on every redelivery.
type Output struct {
	// Result is the handler's result, opaque to the ledger (JSON, say);
	// nil is read back as nil.
	Result []byte `json:"result,omitempty"`
	// Publish lists the messages to publish, in order.
	Publish []Outgoing `json:"publish,omitempty"`
}

// Kind is the [ledger.Outcome.Kind] of the outcomes a Consumer stores: the
// Output, or the failure of a run that failed after its commit point, as
// JSON in Body (Status 0, no Header).
const Kind = "message"

// stored is the Body of a Kind outcome.
type stored struct {
	Output
	// Failure is the text of the handler's error after its commit point
	// (or of why the message went to the dead-letter path); empty for an
	// Output that succeeded.
	Failure string `json:"failure,omitempty"`
	// DeadLetter is the Reason of the Decision that sent the message to
	// the dead-letter path, recorded so that later copies of the message
	// are acknowledged rather than sent there again; empty otherwise, and
	// in records stored before it was kept.
	DeadLetter Reason `json:"dead_letter,omitempty"`
}

func encodeOutcome(out Output, failure string) (ledger.Outcome, error) {
	body, err := json.Marshal(stored{Output: out, Failure: failure})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("consume: encode output: %w", err)
	}
	return ledger.Outcome{Kind: Kind, Body: body}, nil
}

// deadLetterOutcome is the outcome stored for a message sent to the
// dead-letter path for why, with cause's text.
func deadLetterOutcome(why Reason, cause error) (ledger.Outcome, error) {
	s := stored{DeadLetter: why}
	if cause != nil {
		s.Failure = cause.Error()
	}
	body, err := json.Marshal(s)
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("consume: encode output: %w", err)
	}
	return ledger.Outcome{Kind: Kind, Body: body}, nil
}

func decodeOutcome(o ledger.Outcome) (stored, error) {
	var s stored
	if o.Kind != Kind {
		return s, &ledger.KindError{Kind: o.Kind, Want: Kind}
	}
	if err := json.Unmarshal(o.Body, &s); err != nil {
		return s, fmt.Errorf("consume: decode stored output: %w", err)
	}
	return s, nil
}

// fingerprintTag starts the input of every message fingerprint of
// version 1, so that no other fingerprint of the library can equal one.
const fingerprintTag = "idemledger/consume-message/v1\x00"

// Fingerprint returns the fingerprint of msg: the SHA-256 of a version tag,
// the payload, and, for each name in names (sorted, duplicates counted
// once), the name, whether msg has it, and its value, each field with its
// 8-byte big-endian length, so that no two different inputs share a
// fingerprint by their boundaries. The message's ID and its other
// metadata are not part of it.
func Fingerprint(msg Message, names []string) hash.Digest {
	h := sha256.New()
	h.Write([]byte(fingerprintTag))
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field(msg.Payload)
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	for _, name := range sorted {
		field([]byte(name))
		v, ok := msg.Metadata[name]
		if !ok {
			field(nil)
			h.Write([]byte{0})
			continue
		}
		field([]byte(v))
		h.Write([]byte{1})
	}
	var d hash.Digest
	h.Sum(d[:0])
	return d
}
