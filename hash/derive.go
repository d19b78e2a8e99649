package hash

import (
	"crypto/sha256"
	"encoding/hex"
)

// deriveTag starts the input of every derived key of version 1.
const deriveTag = "idemledger/derive-key/v1\x00"

// DeriveKey returns a deterministic idempotency key built from parts, for
// callers whose retries carry no key of their own but a stable identity: a
// queue message id and an operation name, say. The same parts always give
// the same key; part boundaries count, so ("ab", "c") and ("a", "bc") give
// different keys, as do () and ("").
//
// The key is 64 lowercase hexadecimal digits: the SHA-256 of the tag
// "idemledger/derive-key/v1" 0x00 followed by each part as an 8-byte
// big-endian length and its bytes. It is printable ASCII and well within
// the 255-byte key limit.
func DeriveKey(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(deriveTag))
	for _, p := range parts {
		writeField(h, []byte(p))
	}
	var sum [Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}
