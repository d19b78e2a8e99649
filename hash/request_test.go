package hash

import (
	"strings"
	"testing"
)

// The golden digests come from testdata/golden.sh, which builds the byte
// layout documented on Request with printf and hashes it with sha256sum.
// A change of layout must fail here.
func TestRequestGolden(t *testing.T) {
	tests := []struct {
		name                        string
		method, target, contentType string
		body                        string
		want                        string
	}{
		{"json canonicalized", "post", "/v1/payments?currency=eur&x=1", "Application/JSON; charset=utf-8",
			"{ \"b\": [true, null],\n  \"a\": 1.50 }", "f5014b8015e8835efec87bf8f463e3003da8e1f8c143961dcd33e0fb413e050f"},
		{"inexact number stays raw", "POST", "/v1/payments", "application/json",
			`{"amount":9007199254740993}`, "5b7f846acda80792b816ed46a5dd7aad5599ab668ed8a26cdb78367b09fd3853"},
		{"exact number canonical", "POST", "/v1/payments", "application/json",
			`{"amount":9007199254740992}`, "5378d8f4250104ab8cf3d6d9218c97b6caf9b776b904e2fa9f78076a1cb42137"},
		{"+json suffix", "Patch", "/v1/items/7", " application/merge-patch+json ;q=1",
			`{"name":"\u00e9"}`, "1e79d6c077b5dafa8aa53390fe3f47be98ea4590665078af4dbd7459aecc650d"},
		{"text stays raw", "PUT", "/notes/1", "text/plain",
			`hello {"b":1, "a":2}`, "4936da459f1481a3b1a6c9627b48c0cb32e5897090da3eb568ebc9b92ce9075b"},
		{"invalid JSON stays raw", "POST", "/v1/payments", "application/json",
			`{"a":1,}`, "e597e2784d10f14f5cd29787e1cfa986c2433d1b9e61350865d8cb323c57cce3"},
		{"no body, no type", "GET", "/", "", "", "e41e83e32c55e82da75e3fcb7191acad2dbdc3bb11f98852f6518b73b1554295"},
		// U+FFFF is a Unicode noncharacter: canonical form keeps it, as V8
		// does, written raw (EF BF BF), so the escaped and the raw spelling,
		// respaced and reordered, share one fingerprint.
		{"noncharacter escape canonical", "POST", "/v1/notes", "application/json",
			`{"b":1, "a":"\uffff"}`, "57f3949dcb686ba7d16e43bddf863100e241edc6e22663b33ebb4ede9ab71f51"},
		{"raw noncharacter canonical", "POST", "/v1/notes", "application/json",
			"{\"b\":1, \"a\":\"\xef\xbf\xbf\"}", "57f3949dcb686ba7d16e43bddf863100e241edc6e22663b33ebb4ede9ab71f51"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Request(tt.method, tt.target, tt.contentType, []byte(tt.body))
			if got.String() != tt.want {
				t.Errorf("Request = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRequestDistinct(t *testing.T) {
	type req struct{ method, target, ct, body string }
	base := req{"POST", "/pay", "application/json", `{"amount":1}`}
	variants := []req{
		base,
		{"PUT", "/pay", "application/json", `{"amount":1}`},
		{"POST", "/pay?x=1", "application/json", `{"amount":1}`},
		{"POST", "/Pay", "application/json", `{"amount":1}`},
		{"POST", "/pay", "text/plain", `{"amount":1}`},
		{"POST", "/pay", "application/json", `{"amount":2}`},
		{"POST", "/pay", "application/json", `{"amount":9007199254740993}`},
		{"POST", "/pay", "application/json", `{"amount":9007199254740992}`},
		// Field boundaries: moving bytes from one field to the next changes the digest.
		{"POST/", "pay", "application/json", `{"amount":1}`},
		{"POST", "/payapplication/json", "", `{"amount":1}`},
		{"POST", "/pay", "application/json{", `"amount":1}`},
	}
	seen := map[Digest]int{}
	for i, v := range variants {
		d := Request(v.method, v.target, v.ct, []byte(v.body))
		if j, ok := seen[d]; ok {
			t.Errorf("variants %d and %d share fingerprint %s", j, i, d)
		}
		seen[d] = i
	}
	// Spelling that canonical form erases does not matter.
	same := []req{
		{"post", "/pay", "application/json; charset=utf-8", "{ \"amount\" : 1.0 }"},
		{"POST", "/pay", "APPLICATION/JSON", `{"amount":1e0}`},
		{"Post", "/pay", "\tapplication/json", `{"amount":1}`},
	}
	want := Request(base.method, base.target, base.ct, []byte(base.body))
	for _, v := range same {
		if d := Request(v.method, v.target, v.ct, []byte(v.body)); d != want {
			t.Errorf("%+v: %s, want %s", v, d, want)
		}
	}
}

func TestMediaEssence(t *testing.T) {
	tests := []struct {
		in, want string
		json     bool
	}{
		{"application/json", "application/json", true},
		{"Application/JSON; charset=UTF-8", "application/json", true},
		{"application/problem+json", "application/problem+json", true},
		{"application/vnd.api+json;v=2", "application/vnd.api+json", true},
		{"text/json", "text/json", false},
		{"application/json-seq", "application/json-seq", false},
		{"+json", "+json", false},
		{"/+json", "/+json", false},
		{"text/plain", "text/plain", false},
		{"", "", false},
		{" ; charset=utf-8", "", false},
	}
	for _, tt := range tests {
		got := mediaEssence(tt.in)
		if got != tt.want || isJSONEssence(got) != tt.json {
			t.Errorf("mediaEssence(%q) = %q (JSON %v), want %q (JSON %v)", tt.in, got, isJSONEssence(got), tt.want, tt.json)
		}
	}
}

func TestRequestLongMethod(t *testing.T) {
	long := strings.Repeat("x", 100)
	if Request(long, "/", "", nil) != Request(strings.ToUpper(long), "/", "", nil) {
		t.Error("a long method is not uppercased like a short one")
	}
}

// TestRequestConcurrent hashes from several goroutines at once so that the
// race detector sees the pooled buffers.
func TestRequestConcurrent(t *testing.T) {
	want := Request("POST", "/pay", "application/json", []byte(`{"b":1,"a":[1,2,3]}`))
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			ok := true
			for i := 0; i < 500; i++ {
				ok = ok && Request("POST", "/pay", "application/json", []byte(`{"a":[1,2,3],"b":1}`)) == want
			}
			done <- ok
		}()
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Error("a concurrent Request gave another digest")
		}
	}
}
