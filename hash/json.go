package hash

import (
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/idemledger/idemledger/canonical"
)

// bufPool recycles buffers for canonical forms that are hashed and dropped.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf bounds the buffers kept for reuse, so that one huge body does
// not stay pinned in the pool.
const maxPooledBuf = 1 << 20

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// JSON returns the SHA-256 digest of the canonical form (RFC 8785) of the
// JSON text src: exactly sha256(canonical.Transform(src)), so any language
// with a JCS implementation computes the same digest. Input that Transform
// refuses returns the zero Digest and Transform's error (a
// *[canonical.SyntaxError]), wrapped with "hash: json:".
//
// JSON is not a request fingerprint: RFC 8785 writes every number as its
// nearest binary64 (Section 3.2.2.3), so texts whose numbers differ beyond
// that precision, {"amount":9007199254740993} and
// {"amount":9007199254740992}, share a digest. Fingerprint with [Request]
// or [Bytes].
func JSON(src []byte) (Digest, error) {
	buf := getBuf()
	defer putBuf(buf)
	out, err := canonical.Append((*buf)[:0], src)
	if err != nil {
		return Digest{}, fmt.Errorf("hash: json: %w", err)
	}
	*buf = out
	return sha256.Sum256(out), nil
}

// Value returns the SHA-256 digest of the canonical form of v, exactly
// sha256(canonical.Marshal(v)): v is encoded by encoding/json and then
// canonicalized. Errors from either step are returned wrapped with
// "hash: value:", with the zero Digest. Like [JSON], it is not a request
// fingerprint: an int64 beyond 2^53 shares its form with its binary64
// neighbours.
func Value(v any) (Digest, error) {
	out, err := canonical.Marshal(v)
	if err != nil {
		return Digest{}, fmt.Errorf("hash: value: %w", err)
	}
	return sha256.Sum256(out), nil
}
