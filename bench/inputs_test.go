package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// TestInputsStable pins the generated documents, so that figures from two
// runs (or two machines) always measure the same bytes. A change here is a
// change of benchmark: say so in BENCHMARKS.md.
func TestInputsStable(t *testing.T) {
	want := []struct {
		name      string
		size      int
		sha256    string
		objects   int // JSON objects in the document, nested ones included
		members   int // object members in the document
		minBytes  int
		maxBytes  int
		topLength int // members of the top-level object or elements of the top-level array
	}{
		{"api-1KB", 991, "716b541b01465a27cc831f1bdd5c995e4891276d4a63e51f759b8d78cd498bae", 9, 44, 800, 1300, 11},
		{"numbers-100KB", 105095, "5c62cb29664506833cf498f52b2ed82947b77b8679d45d8427141c5a5d761435", 421, 1674, 80_000, 130_000, 4},
		{"array-1MB", 1005863, "8fc287afe4523dd7208a52bfd5785f85d9529814cc624f1b3e492619f757cbcf", 7600, 45600, 900_000, 1_150_000, 3800},
		{"members-5000", 126620, "1f115a7e06983682b1044c49b4574d2165d03e9555042656b0daa77e482d9528", 1, 5000, 100_000, 150_000, 5000},
	}
	inputs := Inputs()
	if len(inputs) != len(want) {
		t.Fatalf("Inputs() returned %d documents, want %d", len(inputs), len(want))
	}
	for i, w := range want {
		in := inputs[i]
		if in.Name != w.name {
			t.Errorf("input %d is %q, want %q", i, in.Name, w.name)
			continue
		}
		if len(in.Data) != w.size || len(in.Data) < w.minBytes || len(in.Data) > w.maxBytes {
			t.Errorf("%s: %d bytes, want %d (within %d..%d)", w.name, len(in.Data), w.size, w.minBytes, w.maxBytes)
		}
		sum := sha256.Sum256(in.Data)
		if got := hex.EncodeToString(sum[:]); got != w.sha256 {
			t.Errorf("%s: SHA-256 %s, want %s", w.name, got, w.sha256)
		}
		if !json.Valid(in.Data) {
			t.Errorf("%s: not valid JSON", w.name)
		}
		var top any
		if err := json.Unmarshal(in.Data, &top); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		objects, members := shape(top)
		if objects != w.objects || members != w.members {
			t.Errorf("%s: %d objects with %d members, want %d with %d", w.name, objects, members, w.objects, w.members)
		}
		var n int
		switch v := top.(type) {
		case map[string]any:
			n = len(v)
		case []any:
			n = len(v)
		}
		if n != w.topLength {
			t.Errorf("%s: top-level value has %d members or elements, want %d", w.name, n, w.topLength)
		}
	}
}

// shape counts the objects and the object members in a decoded value.
func shape(v any) (objects, members int) {
	switch v := v.(type) {
	case map[string]any:
		objects, members = 1, len(v)
		for _, e := range v {
			o, m := shape(e)
			objects += o
			members += m
		}
	case []any:
		for _, e := range v {
			o, m := shape(e)
			objects += o
			members += m
		}
	}
	return objects, members
}
