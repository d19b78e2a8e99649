package hash

import (
	"bytes"
	"errors"
	"testing"

	"github.com/idemledger/idemledger/canonical"
)

// FuzzParseDigest checks that ParseDigest never panics, accepts exactly 64
// hex digits, and that String reads back as the same Digest.
func FuzzParseDigest(f *testing.F) {
	f.Add("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	f.Add("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855")
	f.Add("")
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDigest(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidDigest) || !d.IsZero() {
				t.Fatalf("ParseDigest(%q) = %s, %v", s, d, err)
			}
			return
		}
		if len(s) != 64 {
			t.Fatalf("ParseDigest accepted %d bytes", len(s))
		}
		again, err := ParseDigest(d.String())
		if err != nil || again != d {
			t.Fatalf("round trip of %s: %s, %v", d, again, err)
		}
	})
}

// FuzzRequest checks that Request never panics and that a JSON body and its
// canonical form share a fingerprint whenever the body's numbers are exact.
func FuzzRequest(f *testing.F) {
	f.Add("POST", "/pay?x=1", "application/json", []byte(`{"b":1,"a":2.50}`))
	f.Add("get", "/", "", []byte(nil))
	f.Add("PUT", "/x", "application/problem+json; q=1", []byte(`{"amount":9007199254740993}`))
	f.Fuzz(func(t *testing.T, method, target, contentType string, body []byte) {
		d := Request(method, target, contentType, body)
		if d2 := Request(method, target, contentType, bytes.Clone(body)); d2 != d {
			t.Fatal("Request is not deterministic")
		}
		if !isJSONEssence(mediaEssence(contentType)) {
			return
		}
		canon, err := canonical.Options{ExactNumbers: true}.Transform(body)
		if err != nil {
			return
		}
		if Request(method, target, contentType, canon) != d {
			t.Fatalf("body %q and its canonical form %q differ", body, canon)
		}
	})
}
