package idemhttp

import (
	"errors"
	"net/http"
	"strings"

	"github.com/idemledger/idemledger/ledger"
)

// reason says why an answer was not stored as the handler gave it, or why
// a claim was released. It is finer than ledger.Reason: the marker of a
// hijacked connection keeps "hijack", and the events name it as
// ledger.ReasonFlush (see eventReason).
type reason string

const (
	reasonPanic     reason = "panic"     // the handler panicked
	reasonStatus    reason = "status"    // ShouldStore rejected the status
	reasonOversized reason = "oversized" // the body was longer than MaxBodyBytes
	reasonFlush     reason = "flush"     // the handler flushed (streamed) its answer
	reasonTrailers  reason = "trailers"  // the handler announced trailers
	reasonHijack    reason = "hijack"    // the handler took the connection over
)

// eventReason is the Reason of why in the events: an answer that left
// before it could be stored whole (flushed, with trailers, or over a
// hijacked connection) is ledger.ReasonFlush.
func eventReason(why reason) ledger.Reason {
	switch why {
	case reasonTrailers, reasonHijack:
		return ledger.ReasonFlush
	}
	return ledger.Reason(why)
}

// emit reports e, an event of the protected request p, to
// Options.Observer: every event of Middleware and TxHandler goes through
// it. It sets Method, Route and Duration (since the middleware began its
// work on p), and blots the key and the scope out of Err.
func (cfg *config) emit(p *prepared, e ledger.Event) {
	if cfg.observer == nil {
		return
	}
	e.Method, e.Route = p.r.Method, p.route
	e.Duration = cfg.now().Sub(p.start)
	if e.Err != nil {
		e.Err = redact(e.Err, p.req.Key, p.req.Scope)
	}
	cfg.observer.Observe(p.r.Context(), e)
}

// failureKind returns the event of a failed ledger operation.
func failureKind(err error) ledger.EventKind {
	switch {
	case errors.Is(err, ledger.ErrLeaseLost):
		return ledger.EventLeaseLost
	case busy(err):
		return ledger.EventStoreBusy
	}
	return ledger.EventStoreUnavailable
}

// route returns the route pattern of r for the events: r.Pattern, set by
// the ServeMux that routed r to the middleware, or, when the middleware
// wraps a ServeMux itself, the pattern that mux is about to match. It is
// empty otherwise, never the raw path: a path holds ids, and a metric
// attribute made of it would grow without bound.
func route(r *http.Request, next http.Handler) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	if mux, ok := next.(*http.ServeMux); ok {
		_, pattern := mux.Handler(r)
		return pattern
	}
	return ""
}

// redacted replaces each key or scope found in an error's text.
const redacted = "[redacted]"

// redactedError is an error whose text has the key and the scope blotted
// out. errors.Is still sees the original's chain (ledger.ErrLeaseLost,
// ledger.ErrBusy, context.DeadlineExceeded), but neither Unwrap nor
// errors.As reaches it: a driver's typed error may hold the key in a field
// its text does not show.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// redact returns err with every whole-word occurrence of each secret (the
// key and the scope: the ledger never quotes them, but a database driver's
// message may) in its text replaced by "[redacted]". Whole words, so that
// a one-byte key "k" is blotted in "(t1, k)" but leaves "key" alone: a
// short secret garbles no more of the message than its own occurrences,
// and no length is exempt. An occurrence is whole when the bytes around it
// are not word bytes (ASCII letters, digits, '_' and the bytes of
// multi-byte UTF-8 sequences), except on a side where the secret itself
// ends in a byte that is not a word byte: "-1" is blotted in "a-1".
// Overlapping occurrences are blotted as one. Empty secrets are skipped.
// This is idemgrpc's rule, so that both layers hide the same.
func redact(err error, secrets ...string) error {
	msg := err.Error()
	var hide []bool // hide[i]: byte i of msg belongs to a secret
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(msg[from:], secret)
			if i < 0 {
				break
			}
			i += from
			if end := i + len(secret); wholeWord(msg, secret, i, end) {
				if hide == nil {
					hide = make([]bool, len(msg))
				}
				for j := i; j < end; j++ {
					hide[j] = true
				}
			}
			from = i + 1 // occurrences may overlap
		}
	}
	if hide == nil {
		return &redactedError{msg: msg, err: err}
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		switch {
		case !hide[i]:
			b.WriteByte(msg[i])
		case i == 0 || !hide[i-1]:
			b.WriteString(redacted)
		}
	}
	return &redactedError{msg: b.String(), err: err}
}

// wholeWord reports whether msg[i:end], an occurrence of secret, is not
// part of a longer word.
func wholeWord(msg, secret string, i, end int) bool {
	if wordByte(secret[0]) && i > 0 && wordByte(msg[i-1]) {
		return false
	}
	if wordByte(secret[len(secret)-1]) && end < len(msg) && wordByte(msg[end]) {
		return false
	}
	return true
}

func wordByte(b byte) bool {
	return b == '_' || b >= 0x80 ||
		'0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
