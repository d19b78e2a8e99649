//go:build !race

package hash

import "testing"

// A fingerprint allocates nothing once the pool holds a hasher, but for the
// error with which canonical form turns a body declared JSON to the raw
// form (it does not parse, or a number would change its value). The race detector's pools drop what is put back at random, so
// the count is taken without it.
func TestRequestAllocations(t *testing.T) {
	tests := []struct {
		name, contentType string
		body              []byte
	}{
		{"json", "application/json", []byte(`{"currency":"eur","amount":100,"note":"x"}`)},
		{"json with parameters", "application/json; charset=utf-8", []byte(`[1, 2.50, {"b":1,"a":2}]`)},
		{"raw", "text/plain", []byte("hello")},
		{"no body", "", nil},
	}
	for _, tt := range tests {
		Request("POST", "/v1/payments?x=1", tt.contentType, tt.body) // fills the pool
		got := testing.AllocsPerRun(100, func() {
			Request("POST", "/v1/payments?x=1", tt.contentType, tt.body)
		})
		if got != 0 {
			t.Errorf("%s: Request allocates %v times, want 0", tt.name, got)
		}
	}
}

func BenchmarkRequest(b *testing.B) {
	body := []byte(`{"currency": "eur", "amount": 100, "customer": "cus_123", "metadata": {"order": "o-1"}}`)
	b.ReportAllocs()
	for b.Loop() {
		Request("POST", "/v1/payments", "application/json", body)
	}
}
