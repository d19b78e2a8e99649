// Package redact blots idempotency keys and scopes out of error texts, for
// the protection layers (idemhttp, idemgrpc), whose events and logs must
// never carry either: the ledger never quotes them, but a database
// driver's message may.
package redact

import (
	"errors"
	"strings"
)

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

// Error returns err with every whole-word occurrence of each secret (the
// key and the scope: the ledger never quotes them, but a database driver's
// message may) in its text replaced by "[redacted]". Whole words, so that
// a one-byte key "k" is blotted in "(t1, k)" but leaves "key" alone: a
// short secret garbles no more of the message than its own occurrences,
// and no length is exempt. An occurrence is whole when the bytes around it
// are not word bytes (ASCII letters, digits, '_' and the bytes of
// multi-byte UTF-8 sequences), except on a side where the secret itself
// ends in a byte that is not a word byte: "-1" is blotted in "a-1".
// Overlapping occurrences are blotted as one. Empty secrets are skipped.
// Both layers use it, so that they hide the same.
func Error(err error, secrets ...string) error {
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
