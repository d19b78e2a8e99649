package ledger

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzStoredHeader checks the headers column's codec on its own. Any
// column: decoding never panics; a column without the byte form decodes
// the same through encoding/json's shortcut and through the general path;
// and a decoded header, stored again, reads back as itself. Any values a
// and b: a header made of them reads back exactly, and when both are valid
// UTF-8 it is stored as json.Marshal's bytes, as before the byte form.
func FuzzStoredHeader(f *testing.F) {
	f.Add([]byte(`{"Location":["/orders/7"],"Vary":["B","A"]}`), "caf\xe9", "")
	f.Add([]byte(`{"A":[{"b64":"Y2Fm6Q=="},"x",{"b64":""}],"B":null,"C":[]}`), "\x80", "\xff")
	f.Add([]byte(`{"A":["{\"b64\":\"/w==\"}"]}`), `{"b64":"/w=="}`, "a\xbfb")
	f.Add([]byte(`{"A":[{"b64":"/x=="}]}`), "\xe2\x82", "\xed\xa0\x80")
	f.Add([]byte(`{"A":[{"b64":"/w==","b64":"/w=="}]}`), "caf\u00e9 \u20ac", "\U0001F600")
	f.Add([]byte(`{"A":[null,"x"]}`), "\ufffd", "<&>")
	f.Add([]byte(`null`), "\x00\xff", "\xc0\xaf")
	f.Add([]byte(`{}`), "", "")
	f.Fuzz(func(t *testing.T, stored []byte, a, b string) {
		h, err := decodeHeader(stored)
		if len(stored) > 0 && bytes.IndexByte(stored[1:], '{') < 0 {
			g, gerr := decodeByteForm(stored)
			if (err == nil) != (gerr == nil) || (err == nil && !reflect.DeepEqual(h, g)) {
				t.Fatalf("%q: shortcut %#v, %v; general path %#v, %v", stored, h, err, g, gerr)
			}
		}
		if err == nil && h != nil {
			roundTrip(t, h)
		}

		made := http.Header{"X-A": {a, b}, "X-B": {b}, "X-C": {}, "X-D": nil}
		col := roundTrip(t, made)
		if utf8.ValidString(a) && utf8.ValidString(b) {
			if want, _ := json.Marshal(made); !bytes.Equal(col, want) {
				t.Fatalf("%#v stored as %q, want json.Marshal's %q", made, col, want)
			}
		}
	})
}

// roundTrip stores h and reads it back; it returns the column.
func roundTrip(t *testing.T, h http.Header) []byte {
	t.Helper()
	col, err := headerJSON(Outcome{Header: h})
	if err != nil {
		t.Fatalf("%#v: %v", h, err)
	}
	got, err := decodeHeader(col)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("%#v stored as %q reads back as %#v, %v", h, col, got, err)
	}
	return col
}
