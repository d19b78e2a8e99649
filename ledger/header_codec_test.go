package ledger

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzStoredHeader checks the headers column's codec on its own. Any
// column: decoding never panics; a column without the byte form decodes
// the same through encoding/json's shortcut and through the general path,
// and decodePlain, where it answers, reads it as json.Unmarshal does;
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
	f.Add([]byte(`{"A":["x"],"A":[]}`), "a", "b")
	f.Add([]byte(`{"A":["x"] }`), "\\", "\"")
	f.Fuzz(func(t *testing.T, stored []byte, a, b string) {
		h, err := decodeHeader(stored)
		if p, ok := decodePlain(stored); ok {
			var want map[string][]string
			if jerr := json.Unmarshal(stored, &want); jerr != nil || !reflect.DeepEqual(p, want) {
				t.Fatalf("%q: decodePlain %#v; json.Unmarshal %#v, %v", stored, p, want, jerr)
			}
		}
		if len(stored) > 0 && bytes.IndexByte(stored[1:], '{') < 0 {
			g, gerr := decodeByteForm(stored)
			if (err == nil) != (gerr == nil) || (err == nil && !reflect.DeepEqual(h, g)) {
				t.Fatalf("%q: shortcut %#v, %v; general path %#v, %v", stored, h, err, g, gerr)
			}
		}
		if err == nil && h != nil {
			roundTrip(t, h)
		}

		made := map[string][]string{"X-A": {a, b}, "X-B": {b}, "X-C": {}, "X-D": nil}
		col := roundTrip(t, made)
		if utf8.ValidString(a) && utf8.ValidString(b) {
			if want, _ := json.Marshal(made); !bytes.Equal(col, want) {
				t.Fatalf("%#v stored as %q, want json.Marshal's %q", made, col, want)
			}
		}
	})
}

// roundTrip stores h and reads it back; it returns the column.
func roundTrip(t *testing.T, h map[string][]string) []byte {
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

// TestDecodePlain pins which columns the fast path answers and what it
// reads; the rest fall back to encoding/json.
func TestDecodePlain(t *testing.T) {
	tests := []struct {
		col  string
		want map[string][]string // compared only when ok
		ok   bool
	}{
		{`null`, nil, true},
		{`{}`, map[string][]string{}, true},
		{`{"Location":["/orders/7"],"Vary":["B","A"]}`, map[string][]string{"Location": {"/orders/7"}, "Vary": {"B", "A"}}, true},
		{`{"A":null,"B":[],"C":[""]}`, map[string][]string{"A": nil, "B": {}, "C": {""}}, true},
		{`{"A":["x"],"A":["y","z"]}`, map[string][]string{"A": {"y", "z"}}, true},
		{`{"A":["caf` + "\u00e9" + `"]}`, map[string][]string{"A": {"caf\u00e9"}}, true},
		{`{"A":["\u003c"]}`, nil, false},         // an escape
		{`{"A":["a\"b"]}`, nil, false},           // an escaped quote
		{`{"A":[{"b64":"/w=="}]}`, nil, false},   // the byte form
		{`{"A":[null]}`, nil, false},             // null in a list
		{`{"A": ["x"]}`, nil, false},             // whitespace
		{`{"A":["x"]} `, nil, false},             // trailing bytes
		{`{"A":["x"]`, nil, false},               // cut short
		{`{"A":["x",]}`, nil, false},             // a trailing comma
		{`{"A":["` + "\xff" + `"]}`, nil, false}, // invalid UTF-8
		{`{"A":["` + "\t" + `"]}`, nil, false},   // a control character
		{`{"A":nul}`, nil, false},                // a bad literal
		{``, nil, false},
		{`[]`, nil, false},
	}
	for _, tt := range tests {
		h, ok := decodePlain([]byte(tt.col))
		if ok != tt.ok || ok && !reflect.DeepEqual(h, tt.want) {
			t.Errorf("decodePlain(%q) = %#v, %t; want %#v, %t", tt.col, h, ok, tt.want, tt.ok)
		}
	}
}
