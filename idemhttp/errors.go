package idemhttp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/idemledger/idemledger/idemclient"
)

var (
	// ErrMissingKey is returned by [ParseKey] when the request has no
	// Idempotency-Key field. The middleware answers 400 only when
	// [Options.Required] is set, and runs the handler unprotected otherwise.
	ErrMissingKey = errors.New("idemhttp: missing Idempotency-Key")

	// ErrInvalidKey is wrapped by the errors of [ParseKey] and [SetKey] for a key
	// that is empty, malformed, not printable ASCII, too long, or sent on
	// more than one field line. The middleware answers it with 400.
	ErrInvalidKey = idemclient.ErrInvalidKey

	// ErrKeyTooLong is wrapped, together with [ErrInvalidKey], by the error of
	// [ParseKey] for a key longer than the limit in bytes.
	ErrKeyTooLong = errors.New("key too long")

	// ErrNoRandomness is wrapped by the error of [NewKey] when the system's
	// cryptographic random source fails. No weaker key is ever made instead.
	ErrNoRandomness = idemclient.ErrNoRandomness
)

// ScopeError is an error that [Options.Scope] may return to choose the
// refusal: its Status (401 for a missing API key, 403 for a revoked one),
// its Detail and header lines to add (a WWW-Authenticate challenge, which
// RFC 9110 Section 15.5.2 requires with 401). The refusal's Code stays
// [CodeScope] and its Err is the ScopeError. A Status outside 400 to 599
// means 400; an empty Detail means the default sentence. Wrapped errors
// are found too ([errors.As]).
type ScopeError struct {
	Status int
	Detail string      // for the client: never put the key in it
	Header http.Header // lines added to the refusal; may be nil
	Err    error       // the cause, for logs; may be nil
}

func (e *ScopeError) Error() string {
	msg := "idemhttp: scope refused with " + strconv.Itoa(e.Status)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *ScopeError) Unwrap() error { return e.Err }
