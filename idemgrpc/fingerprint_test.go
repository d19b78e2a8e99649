package idemgrpc_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idemledger/idemledger/idemgrpc"
)

// TestFingerprintGolden pins the layout: the digests were computed from the
// package doc's description with Python's hashlib, not with this code.
func TestFingerprintGolden(t *testing.T) {
	tests := []struct {
		method string
		req    any
		want   string
	}{
		// StringValue{value: "abc"} encodes as 0a 03 61 62 63.
		{"/p.S/M", wrapperspb.String("abc"), "8b8b5bec26c130a43ec2771615e1ed403a0c1dcf72f56fe81bfacd53224272e9"},
		// An empty message encodes as no bytes.
		{"/p.S/M", wrapperspb.String(""), "a10eeb06de624189794a388b3ca3fe69c7671d11f5f6ac5757523b81f77e5505"},
	}
	for _, tt := range tests {
		got, err := idemgrpc.Fingerprint(tt.method, tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != tt.want {
			t.Errorf("Fingerprint(%q, %v) = %s, want %s", tt.method, tt.req, got, tt.want)
		}
	}
}

// TestFingerprintDistinct: equal messages give one fingerprint whatever the
// order their maps were filled in; any change of method or message gives
// another, including a shift of bytes between the method and the message.
func TestFingerprintDistinct(t *testing.T) {
	a := mustStruct(t, map[string]any{"amount": 1, "currency": "EUR", "memo": "x"})
	b := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, k := range []string{"memo", "currency", "amount"} { // another insertion order
		b.Fields[k] = a.Fields[k]
	}
	fp := func(method string, req any) string {
		d, err := idemgrpc.Fingerprint(method, req)
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	if fp("/p.S/M", a) != fp("/p.S/M", b) {
		t.Error("equal messages filled in another order have different fingerprints")
	}
	distinct := map[string]string{
		"base":          fp("/p.S/M", a),
		"other method":  fp("/p.S/N", a),
		"other amount":  fp("/p.S/M", mustStruct(t, map[string]any{"amount": 2, "currency": "EUR", "memo": "x"})),
		"boundary ab|c": fp("/p.S/Mab", wrapperspb.String("c")),
		"boundary a|bc": fp("/p.S/Ma", wrapperspb.String("bc")),
	}
	seen := map[string]string{}
	for name, d := range distinct {
		if other, dup := seen[d]; dup {
			t.Errorf("%s and %s share a fingerprint", name, other)
		}
		seen[d] = name
	}
	if _, err := idemgrpc.Fingerprint("/p.S/M", "not a message"); !errors.Is(err, idemgrpc.ErrNotProto) {
		t.Errorf("Fingerprint of a string: %v, want ErrNotProto", err)
	}
}
