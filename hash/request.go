package hash

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strings"

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
	h := sha256.New()
	h.Write([]byte(requestTag))

	var tmp [64]byte
	m := tmp[:0]
	if len(method) > len(tmp) {
		m = make([]byte, 0, len(method))
	}
	for i := 0; i < len(method); i++ {
		c := method[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		m = append(m, c)
	}
	writeField(h, m)
	writeField(h, []byte(target))
	essence := mediaEssence(contentType)
	writeField(h, []byte(essence))

	form, payload := formRaw, body
	if isJSONEssence(essence) {
		buf := getBuf()
		defer putBuf(buf)
		if out, err := exactJSON.Append((*buf)[:0], body); err == nil {
			*buf = out
			form, payload = formCanonical, out
		}
	}
	writeField(h, []byte(form))
	writeField(h, payload)

	var d Digest
	h.Sum(d[:0])
	return d
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
