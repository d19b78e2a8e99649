package consume

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Action is what the adapter does with the message.
type Action uint8

const (
	// Ack: the message is done; publish Decision.Output.Publish, then
	// acknowledge it.
	Ack Action = iota + 1
	// Nack: the message is not done; negatively acknowledge it so that
	// the broker redelivers it after [Decision.Delay] (or leave it to
	// redeliver when the broker cannot delay).
	Nack
	// DeadLetter: the message must not run; send it to the broker's
	// dead-letter or poison path with [Decision.Err] (a *[DeadLetterError])
	// as the reason, and acknowledge it there.
	DeadLetter
)

// String returns "ack", "nack" or "dead_letter".
func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Nack:
		return "nack"
	case DeadLetter:
		return "dead_letter"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Decision is a Consumer's answer for one delivery.
type Decision struct {
	Action Action
	// Delay is how long to wait before the message is delivered again,
	// for Nack; 0 otherwise.
	Delay time.Duration
	// Output is, for Ack, the first run's Output: the handler's own on
	// the first delivery, the stored one on a redelivery (Replayed). Nil
	// otherwise.
	Output *Output
	// Replayed reports that the handler did not run: the message was
	// answered from the record of an earlier delivery.
	Replayed bool
	// Err is why the message is not acknowledged: for Nack the handler's
	// error (unchanged), an *ledger.InFlightError, the store's failure,
	// or the error of the delivery's ended context; for [DeadLetter] a
	// *DeadLetterError. Nil for Ack. It may quote the message's content
	// and key: log it as carefully as the message.
	Err error
}

// Reason says why a message goes to the dead-letter path.
type Reason string

// The reasons of DeadLetterError.
const (
	// ReasonKeyReused: the message's ID came earlier with another
	// payload (or other fingerprinted metadata), whose record stands.
	ReasonKeyReused Reason = "key_reused"
	// ReasonFailed: the handler failed (or panicked) after its commit
	// point, on this delivery or an earlier one whose failure is stored.
	ReasonFailed Reason = "failed_after_commit_point"
	// ReasonOutcomeNotStored: an earlier delivery passed its commit point
	// and its process vanished before storing the outcome; the effect was
	// made, its Output is lost.
	ReasonOutcomeNotStored Reason = "outcome_not_stored"
	// ReasonInvalidKey: the message has no ID, [Options.Key] failed, or the
	// ledger refuses the key (too long, not printable ASCII).
	ReasonInvalidKey Reason = "invalid_key"
	// ReasonStoredOutcome: the record under the key is not a message's
	// (another kind of operation used the key) or cannot be read.
	ReasonStoredOutcome Reason = "stored_outcome"
	// ReasonMaxAttempts: the handler failed before its commit point on
	// [Options.MaxAttempts] runs of the message (the retry budget); the
	// cause is an *AttemptsError.
	ReasonMaxAttempts Reason = "max_attempts"
)

// ErrDeadLetter is matched ([errors.Is]) by every *DeadLetterError.
var ErrDeadLetter = errors.New("consume: dead letter")

// DeadLetterError is [Decision.Err] for DeadLetter. errors.Is(err,
// [ErrDeadLetter]) reports true for it; Err, when set, is reachable with
// [errors.Is] and [errors.As] too.
type DeadLetterError struct {
	Reason Reason
	// Err is the cause: ledger.ErrKeyReused, a *ledger.CommittedError,
	// the handler's stored failure, the key's refusal. It never holds the
	// key or the scope.
	Err error
}

// Error reads "consume: dead letter: <reason>: <cause>".
func (e *DeadLetterError) Error() string {
	s := ErrDeadLetter.Error() + ": " + string(e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrDeadLetter.
func (e *DeadLetterError) Is(target error) bool { return target == ErrDeadLetter }

// Unwrap returns the cause.
func (e *DeadLetterError) Unwrap() error { return e.Err }

// ErrInvalidOptions is returned (wrapped, with the reason) by New when an
// Options field cannot work: a scope the ledger refuses, a negative delay.
var ErrInvalidOptions = errors.New("consume: invalid options")

// AttemptsError is the cause inside the [DeadLetterError] of a message sent
// to the dead-letter path because its handler kept failing
// ([ReasonMaxAttempts]).
type AttemptsError struct {
	// Attempts is how many runs of the message failed.
	Attempts int
	// Err is the last run's error, nil for a delivery that found the
	// budget already spent (it did not run the handler).
	Err error
}

// Error reads "consume: the handler failed on N runs: <last error>".
func (e *AttemptsError) Error() string {
	s := "consume: the handler failed on " + strconv.Itoa(e.Attempts) + " runs"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the last run's error.
func (e *AttemptsError) Unwrap() error { return e.Err }

// FailedError is the cause inside the [DeadLetterError] of a message whose
// handler failed after its commit point, on this delivery (Err is the
// handler's error) or on an earlier one (Err is nil and Message the
// stored text of that error).
type FailedError struct {
	Message string
	Err     error
}

// Error returns the handler's error text.
func (e *FailedError) Error() string { return e.Message }

// Unwrap returns the handler's error, on the delivery that failed.
func (e *FailedError) Unwrap() error { return e.Err }

func deadLetter(why Reason, err error) Decision {
	return Decision{Action: DeadLetter, Err: &DeadLetterError{Reason: why, Err: err}}
}

func nack(delay time.Duration, err error) Decision {
	return Decision{Action: Nack, Delay: delay, Err: err}
}

// panicError is the failure stored for a handler that panicked after its
// commit point.
func panicError(v any) error { return fmt.Errorf("consume: handler panicked: %v", v) }
