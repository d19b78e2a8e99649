package hash

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strings"
	"sync"

	"github.com/idemledger/idemledger/canonical"
)

// requestTag starts every request fingerprint of layout version 1. A later
// layout gets a new tag, so its digests can never match version 1 ones.
const requestTag = "idemledger/request/v1\x00"

// Body forms, the fourth field of a request fingerprint.
const (
	formCanonical = "canonical"
	formRaw       = "raw"
)

// Request returns the fingerprint of an HTTP request: the digest that tells
// whether two requests carrying the same idempotency key ask for the same
// operation.
//
// Inputs: method as sent (it is uppercased, ASCII only); target, the path
// with its query exactly as sent (not decoded or reordered); contentType,
// the Content-Type header value; and the body bytes.
//
// The body enters in canonical form (RFC 8785) when the content type's
// essence is application/json or any type/subtype ending in +json, and the
// body is JSON that [canonical.Transform] accepts (Unicode noncharacters
// included, nesting up to [canonical.DefaultMaxDepth]) whose numbers keep
// their written decimal value in canonical form
// ([canonical.Options.ExactNumbers]); otherwise its raw bytes enter. So
// {"b":1, "a":2.50} and {"a":2.5,"b":1} share a fingerprint, while
// {"amount":9007199254740993} and {"amount":9007199254740992} never do.
// (Releases before noncharacters and 10,000 levels were accepted
// fingerprinted such bodies by their raw bytes; the form is part of the
// digest, so a retry across the upgrade gets a key-reuse refusal, never
// another request's outcome.)
//
// The essence is the part of contentType before any ';', with spaces and
// tabs trimmed and ASCII letters lowercased ("Application/JSON; charset=utf-8"
// gives "application/json"); an absent header gives the empty string.
//
// Byte layout (version 1), the input to one SHA-256:
//
//	"idemledger/request/v1" 0x00                 tag, 22 bytes
//	len(method)  uint64 big-endian, method       uppercased
//	len(target)  uint64 big-endian, target       as given
//	len(essence) uint64 big-endian, essence      lowercased type/subtype
//	len(form)    uint64 big-endian, form         "canonical" or "raw"
//	len(body)    uint64 big-endian, body         canonical form or raw bytes
//
// Every field carries its length, so no two different tuples share an
// encoding. The layout is pinned by golden digests in the tests, computed
// from this description with printf and sha256sum; changing it requires a
// new tag.
func Request(method, target, contentType string, body []byte) Digest {
	rh := requestHashers.Get().(*requestHasher)
	defer rh.put()
	b := append(rh.buf[:0], requestTag...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(method)))
	for i := 0; i < len(method); i++ {
		c := method[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	b = appendField(b, target)
	essence := mediaEssence(contentType)
	b = appendField(b, essence)

	rh.h.Reset()
	fields := len(b)
	if isJSONEssence(essence) {
		// The canonical form goes straight after its length's place, which
		// is filled in once the form's length is known.
		b = appendField(b, formCanonical)
		b = binary.BigEndian.AppendUint64(b, 0)
		if out, err := exactJSON.Append(b, body); err == nil {
			binary.BigEndian.PutUint64(out[len(b)-8:], uint64(len(out)-len(b)))
			rh.buf = out
			rh.h.Write(out)
			return rh.sum()
		}
	}
	b = appendField(b[:fields], formRaw)
	b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	rh.buf = b
	rh.h.Write(b)
	rh.h.Write(body)
	return rh.sum()
}

// requestHasher is what one Request call needs, kept between calls so that
// a fingerprint allocates nothing: the SHA-256 state, the buffer that
// holds the fields (and a JSON body's canonical form), and the sum's room.
type requestHasher struct {
	h   hash.Hash
	buf []byte
	out [Size]byte
}

var requestHashers = sync.Pool{New: func() any { return &requestHasher{h: sha256.New()} }}

func (rh *requestHasher) sum() Digest {
	return Digest(rh.h.Sum(rh.out[:0]))
}

// put returns rh to the pool, without a buffer grown past maxPooledBuf by
// a large body.
func (rh *requestHasher) put() {
	if cap(rh.buf) > maxPooledBuf {
		rh.buf = nil
	}
	requestHashers.Put(rh)
}

// appendField appends s with its length before it, as the layout has it.
func appendField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// exactJSON canonicalizes request bodies: a number whose canonical form
// would name another amount sends the body down the raw path instead.
var exactJSON = canonical.Options{ExactNumbers: true}

func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// mediaEssence returns the lowercased type/subtype of a Content-Type value,
// without parameters (the "essence" of the WHATWG MIME Sniffing standard).
func mediaEssence(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	contentType = strings.Trim(contentType, " \t")
	for i := 0; i < len(contentType); i++ {
		if c := contentType[i]; 'A' <= c && c <= 'Z' {
			return asciiLower(contentType)
		}
	}
	return contentType
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// isJSONEssence reports whether a media type essence names JSON:
// application/json or a structured syntax suffix +json (RFC 6839 section 3.1).
func isJSONEssence(essence string) bool {
	if essence == "application/json" {
		return true
	}
	slash := strings.IndexByte(essence, '/')
	return slash > 0 && strings.HasSuffix(essence[slash+1:], "+json")
}
