package idemhttp

import "errors"

var (
	// ErrMissingKey is returned by ParseKey when the request has no
	// Idempotency-Key field. The middleware answers 400 only when
	// Options.Required is set, and runs the handler unprotected otherwise.
	ErrMissingKey = errors.New("idemhttp: missing Idempotency-Key")

	// ErrInvalidKey is wrapped by the errors of ParseKey and SetKey for a key
	// that is empty, malformed, not printable ASCII, too long, or sent on
	// more than one field line. The middleware answers it with 400.
	ErrInvalidKey = errors.New("idemhttp: invalid Idempotency-Key")

	// ErrKeyTooLong is wrapped, together with ErrInvalidKey, by the error of
	// ParseKey for a key longer than the limit in bytes.
	ErrKeyTooLong = errors.New("key too long")

	// ErrNoRandomness is wrapped by the error of NewKey when the system's
	// cryptographic random source fails. No weaker key is ever made instead.
	ErrNoRandomness = errors.New("idemhttp: no randomness for a key")
)
