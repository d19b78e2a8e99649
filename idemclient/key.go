package idemclient

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/dunglas/httpsfv"
	"github.com/google/uuid"

	"github.com/idemledger/idemledger/internal/syntax"
)

// HeaderName is the request header field that carries the idempotency key
// (draft-ietf-httpapi-idempotency-key-header-06, Section 2).
const HeaderName = "Idempotency-Key"

// DefaultReplayHeader is the field a server protected by idemledger sets to
// "true" on every replayed answer (idemhttp.Options.ReplayHeader), which
// Transport never retries.
const DefaultReplayHeader = "Idempotent-Replayed"

var (
	// ErrInvalidKey is wrapped by the error of [SetKey] for a key that no
	// sf-string can carry; it is idemhttp.ErrInvalidKey too.
	ErrInvalidKey = syntax.ErrInvalid

	// ErrNoRandomness is wrapped by the error of [NewKey] when the system's
	// random source fails.
	ErrNoRandomness = errors.New("idemclient: no randomness for a key")
)

// NewKey returns a fresh idempotency key: a random UUID (RFC 9562, version
// 4) in its 36-character text form, drawn from crypto/rand.
//
// It returns an error wrapping [ErrNoRandomness] when the random source fails,
// and never a weaker key. For a key derived from the request's content
// instead (so that a restarted client finds the same key), see
// hash.DeriveKey.
func NewKey() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoRandomness, err)
	}
	return u.String(), nil
}

// GenerateKey is [NewKey] for callers that cannot handle an error: it panics
// when the random source fails. Since Go 1.24 crypto/rand never reports a
// failure (the runtime aborts instead), so the panic is for a random source
// replaced through uuid.SetRand. Transport uses NewKey.
func GenerateKey() string {
	k, err := NewKey()
	if err != nil {
		panic(err)
	}
	return k
}

// SetKey sets the Idempotency-Key field of h to key, serialized as an RFC
// 9651 sf-string (Section 4.1.6): in double quotes, with '"' and '\' escaped,
// as draft-ietf-httpapi-idempotency-key-header-06 Section 2.1 asks. It
// replaces any key h already holds.
//
// It returns an error wrapping [ErrInvalidKey], and leaves h unchanged, when
// key is empty or holds a byte outside printable ASCII (0x20-0x7E), which no
// sf-string can carry. The length is the server's business and is not
// checked here.
func SetKey(h http.Header, key string) error {
	v, err := formatKey(key)
	if err != nil {
		return err
	}
	h.Set(HeaderName, v)
	return nil
}

func formatKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if err := syntax.Check(key, true); err != nil {
		return "", err
	}
	v, err := httpsfv.Marshal(httpsfv.NewItem(key))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return v, nil
}
