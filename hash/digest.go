package hash

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Size is the length of a Digest in bytes: a SHA-256 output (FIPS 180-4).
const Size = sha256.Size

// Digest is a SHA-256 digest. Its zero value (32 zero bytes) is never the
// output of any function in this package in practice, and the ledger
// refuses it as a fingerprint.
type Digest [Size]byte

// ErrInvalidDigest is returned by [ParseDigest] and [Digest.UnmarshalText] when
// the text is not exactly 64 hexadecimal digits.
var ErrInvalidDigest = errors.New("hash: invalid digest")

// Bytes returns the SHA-256 digest of b, taken as raw bytes.
func Bytes(b []byte) Digest {
	return sha256.Sum256(b)
}

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool {
	return d == Digest{}
}

// String returns d as 64 lowercase hexadecimal digits.
func (d Digest) String() string {
	return hex.EncodeToString(d[:])
}

// MarshalText implements encoding.TextMarshaler with the form of String.
func (d Digest) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(Size))
	hex.Encode(out, d[:])
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler. It accepts exactly 64
// hexadecimal digits, in either case, and returns an error wrapping
// [ErrInvalidDigest] otherwise; d is left unchanged on error.
func (d *Digest) UnmarshalText(text []byte) error {
	if len(text) != hex.EncodedLen(Size) {
		return fmt.Errorf("%w: want %d hex digits, got %d bytes", ErrInvalidDigest, hex.EncodedLen(Size), len(text))
	}
	var out Digest
	if _, err := hex.Decode(out[:], text); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidDigest, err)
	}
	*d = out
	return nil
}

// ParseDigest parses 64 hexadecimal digits, as written by [Digest.String].
// It returns an error wrapping [ErrInvalidDigest] for any other text.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	err := d.UnmarshalText([]byte(s))
	return d, err
}
