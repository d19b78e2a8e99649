package idemhttp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/idemledger/idemledger/idemclient"
	"github.com/idemledger/idemledger/internal/syntax"
	"github.com/idemledger/idemledger/ledger"
)

// HeaderName is the request header field that carries the idempotency key
// (draft-ietf-httpapi-idempotency-key-header-06, Section 2).
const HeaderName = idemclient.HeaderName

// KeyRules says how [ParseKey] reads the Idempotency-Key field. The zero value
// is the lenient default: quoted sf-strings and bare keys, at most
// [ledger.DefaultMaxKeyLength] bytes (255, Stripe's documented limit too).
type KeyRules struct {
	// MaxLength is the longest key accepted, in bytes of the decoded key
	// (without quotes or escapes). Zero or less means
	// [ledger.DefaultMaxKeyLength].
	MaxLength int

	// Strict accepts only the form of the draft: an RFC 9651 Item whose
	// bare item is a String (sf-string, RFC 9651 Section 3.3.3). Without
	// it, a bare unquoted key, as Stripe's clients send, is accepted too.
	Strict bool
}

// ParseKey returns the idempotency key carried by h.
//
// The field is read as an RFC 9651 Item whose value is a String
// (`Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`), as
// draft-ietf-httpapi-idempotency-key-header-06 Section 2.1 says. Parameters
// on the item (`"k";v=1`) are ignored. Unless rules.Strict is set, a bare
// unquoted key (`Idempotency-Key: 8e03978e-...`) is accepted as well and
// names the same key as its quoted form. A bare key is the whole field value,
// trimmed of spaces and tabs, made of printable ASCII (spaces inside
// included, as stripe-go sends `order 42`) without commas: it is never read
// as an RFC 9651 Token with parameters, so `batch;x` and `batch;y` are two
// keys, and bare `a;b` names the same key as quoted `"a;b"`. A comma is
// refused in a bare key because a proxy that joins two Idempotency-Key
// lines makes one (RFC 9110 Section 5.3): quote such a key. A value that
// begins with '"' must be a valid sf-string.
//
// Errors: [ErrMissingKey] when h has no Idempotency-Key field; an error
// wrapping [ErrInvalidKey] when the field appears on more than one line, or the
// key is empty, malformed, holds a character outside printable ASCII
// (0x20-0x7E), or is longer than the limit (then it also wraps
// [ErrKeyTooLong]).
func ParseKey(h http.Header, rules KeyRules) (string, error) {
	lines := h.Values(HeaderName)
	switch len(lines) {
	case 0:
		return "", ErrMissingKey
	case 1:
	default:
		// The draft forbids a second field line; joining them would make
		// a list, which is no key at all.
		return "", fmt.Errorf("%w: %w (%d)", ErrInvalidKey, errKeyLines, len(lines))
	}
	max := rules.MaxLength
	if max <= 0 {
		max = ledger.DefaultMaxKeyLength
	}
	return parseKeyValue(lines[0], max, rules.Strict)
}

// The ways a key can be malformed that keyProblem explains to the client;
// their texts end the errors of [ParseKey] after [ErrInvalidKey]'s.
var (
	errKeyEmpty     = errors.New("empty")
	errKeyLines     = errors.New("sent on more than one field line")
	errKeyMalformed = errors.New("malformed sf-string")
	errKeyUnquoted  = errors.New("not an RFC 9651 sf-string")
)

func parseKeyValue(raw string, max int, strict bool) (string, error) {
	v := strings.Trim(raw, " \t")
	if v == "" {
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, errKeyEmpty)
	}
	// A value far longer than any acceptable key is refused before parsing:
	// the quoted form of a key of max bytes is at most 2*max+2 bytes, and
	// parameters worth keeping are not that long.
	if len(v) > 2*max+64 {
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, ErrKeyTooLong)
	}

	if v[0] != '"' {
		if strict {
			return "", fmt.Errorf("%w: %w", ErrInvalidKey, errKeyUnquoted)
		}
		// A bare key is the whole value, never parsed as a Token with
		// parameters: cutting `batch;x` and `batch;y` at ';' would make two
		// operations share one record, and the second would be answered
		// with the first one's outcome.
		return checkKey(v, false, max)
	}
	item, err := httpsfv.UnmarshalItem([]string{v})
	if err != nil || !isString(item.Value) {
		// It looks quoted but is not a valid sf-string (an unknown escape,
		// a control character, a missing closing quote, text after it): a
		// bare reading would keep the quotes and name another key.
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, errKeyMalformed)
	}
	// Parameters after the closing quote (`"k";v=1`) are ignored, as the
	// draft says.
	return checkKey(item.Value.(string), true, max)
}

// checkKey returns key when it is non-empty, within max bytes and of the
// characters its form allows.
func checkKey(key string, quoted bool, max int) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, errKeyEmpty)
	}
	if err := syntax.Check(key, quoted); err != nil {
		return "", err
	}
	if len(key) > max {
		return "", fmt.Errorf("%w: %w: %d bytes, limit %d", ErrInvalidKey, ErrKeyTooLong, len(key), max)
	}
	return key, nil
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}
