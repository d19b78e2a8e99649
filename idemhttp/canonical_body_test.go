package idemhttp

import (
	"strings"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// TestFingerprintCanonicalBodies covers the JSON bodies that canonical form
// used to refuse and now takes (Unicode noncharacters, nesting up to 10,000
// levels): they are fingerprinted on their canonical form like any JSON, so
// a retry that respaces, reorders or spells a character otherwise is a
// replay, not a 422. Past 10,000 levels the raw bytes still count.
func TestFingerprintCanonicalBodies(t *testing.T) {
	nest := func(n int, sep string) string { return strings.Repeat("["+sep, n) + strings.Repeat("]", n) }
	tests := []struct {
		name         string
		first, retry string
		canonical    string // the canonical form that is fingerprinted; "" for the raw bytes
		retryStatus  int
	}{
		{"escaped U+FFFF, respaced and reordered", `{"b":1,"a":"\uffff"}`, `{ "a" : "\uffff", "b" : 1 }`,
			"{\"a\":\"\uFFFF\",\"b\":1}", 201},
		{"escaped U+FFFF, then raw", `{"a":"\uffff"}`, "{\"a\":\"\xef\xbf\xbf\"}",
			"{\"a\":\"\uFFFF\"}", 201},
		{"raw U+FDD0, respaced", "[\"\xef\xb7\x90\"]", "[ \"\xef\xb7\x90\" ]",
			"[\"\uFDD0\"]", 201},
		{"U+10FFFF name, escaped then raw", `{"\udbff\udfff":1,"a":2}`, "{\"a\":2, \"\xf4\x8f\xbf\xbf\":1}",
			"{\"a\":2,\"\U0010FFFF\":1}", 201},
		{"another noncharacter (control)", `{"a":"\uffff"}`, `{"a":"\ufffe"}`,
			"{\"a\":\"\uFFFF\"}", 422},
		{"10000 levels, respaced", nest(10_000, ""), nest(10_000, " "),
			nest(10_000, ""), 201},
		{"10001 levels, respaced (control: raw bytes)", nest(10_001, ""), nest(10_001, " "),
			"", 422},
	}
	eachEngine(t, func(t *testing.T, e string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := setup(t, e, Options{}, ledger.Options{}, created)
				if a := b.do(t, "POST", "/notes", tt.first, "k"); a.status != 201 || a.header.Get(DefaultReplayHeader) != "" {
					t.Fatalf("first: %d %.80q", a.status, a.body)
				}
				a := b.do(t, "POST", "/notes", tt.retry, "k")
				if a.status != tt.retryStatus {
					t.Fatalf("retry: %d %.80q, want %d", a.status, a.body, tt.retryStatus)
				}
				if tt.retryStatus == 201 && a.header.Get(DefaultReplayHeader) != "true" {
					t.Fatalf("retry not a replay: %d %q", a.status, a.header)
				}
				if n := b.calls.Load(); n != 1 {
					t.Fatalf("handler ran %d times, want 1", n)
				}
				// hash.Request takes a canonical form as it is, so the
				// fingerprint of the first body is that of its canonical form.
				fp := tt.first
				if tt.canonical != "" {
					fp = tt.canonical
				}
				want := hash.Request("POST", "/notes", "application/json", []byte(fp))
				if rec := b.record(t, "k"); rec == nil || rec.Fingerprint != want {
					t.Fatalf("stored fingerprint %v, want %v", rec, want)
				}
			})
		}
	})
}
