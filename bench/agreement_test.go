package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"
	"unicode/utf16"
)

// canonicalizers returns the implementations that claim RFC 8785 output:
// everything but the Compact floor.
func canonicalizers() []Impl {
	var out []Impl
	for _, im := range Implementations() {
		if !im.Floor {
			out = append(out, im)
		}
	}
	return out
}

// TestAgreement checks that every canonicalizer turns each benchmark input
// into the same bytes, so that the benchmark compares equal work. On these
// inputs (valid I-JSON, numbers inside binary64) none of the peers differs
// from RFC 8785; their deviations on bad input are in TestPeerDeviations.
//
// Agreement alone could hide a shared mistake, so the agreed output is also
// checked against properties taken from RFC 8785 itself, by code that does
// not canonicalize: same value as the input, no whitespace, names sorted by
// UTF-16 code units, only the escapes of section 3.2.2.2, and a fixed point.
func TestAgreement(t *testing.T) {
	impls := canonicalizers()
	for _, in := range Inputs() {
		t.Run(in.Name, func(t *testing.T) {
			ref, err := impls[0].Transform(in.Data)
			if err != nil {
				t.Fatalf("%s: %v", impls[0].Name, err)
			}
			for _, im := range impls[1:] {
				got, err := im.Transform(in.Data)
				if err != nil {
					t.Errorf("%s: %v", im.Name, err)
					continue
				}
				if !bytes.Equal(got, ref) {
					t.Errorf("%s and %s differ: %s", im.Name, impls[0].Name, firstDifference(got, ref))
				}
			}

			sameValue(t, in.Data, ref)
			if err := checkCanonicalSyntax(ref); err != nil {
				t.Errorf("agreed output: %v", err)
			}
			for _, im := range impls {
				again, err := im.Transform(ref)
				if err != nil || !bytes.Equal(again, ref) {
					t.Errorf("%s: canonical form is not a fixed point: %v, %s", im.Name, err, firstDifference(again, ref))
				}
			}

			// The inputs are meant to make a canonicalizer work: dropping
			// whitespace alone must not give the canonical form.
			var compacted bytes.Buffer
			if err := json.Compact(&compacted, in.Data); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(compacted.Bytes(), ref) {
				t.Errorf("input is canonical already once compacted; it measures nothing beyond Compact")
			}
		})
	}
}

func firstDifference(a, b []byte) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	lo := max(0, i-20)
	return fmt.Sprintf("first at byte %d: %q vs %q", i, a[lo:min(len(a), i+20)], b[lo:min(len(b), i+20)])
}

// sameValue decodes both texts with encoding/json (numbers as float64, as
// RFC 8785 section 3.2.2.3 reads them) and requires equal trees.
func sameValue(t *testing.T, in, out []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatalf("input: %v", err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("output: %v", err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("output does not hold the input's value")
	}
}

// checkCanonicalSyntax checks the parts of RFC 8785 that can be checked
// without a canonicalizer: no whitespace between tokens (3.2.1), strings
// escaped only as 3.2.2.2 says, and object names in strictly increasing
// UTF-16 code unit order (3.2.3), which also rules out duplicates.
func checkCanonicalSyntax(out []byte) error {
	if err := checkWhitespaceAndEscapes(out); err != nil {
		return err
	}
	return checkOrder(out)
}

func checkWhitespaceAndEscapes(out []byte) error {
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		if !inString {
			switch c {
			case ' ', '\t', '\n', '\r':
				return fmt.Errorf("whitespace at byte %d", i)
			case '"':
				inString = true
			}
			continue
		}
		switch {
		case c == '"':
			inString = false
		case c < 0x20:
			return fmt.Errorf("unescaped control character at byte %d", i)
		case c == '\\':
			i++
			switch out[i] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case 'u':
				// Only control characters without a short form may be
				// written as \u00hh, with lower-case hex digits.
				var r rune
				if _, err := fmt.Sscanf(string(out[i+1:i+5]), "%04x", &r); err != nil {
					return fmt.Errorf("bad \\u escape at byte %d", i)
				}
				short := r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t'
				if r >= 0x20 || short || string(out[i+1:i+5]) != fmt.Sprintf("%04x", r) {
					return fmt.Errorf("needless or upper-case \\u escape %q at byte %d", out[i-1:i+5], i)
				}
				i += 4
			default:
				return fmt.Errorf("escape %q at byte %d", out[i-1:i+1], i)
			}
		}
	}
	return nil
}

func checkOrder(out []byte) error {
	dec := json.NewDecoder(bytes.NewReader(out))
	// One frame per open object or array: the last name seen in an object,
	// and whether the next string token is a name.
	type frame struct {
		object   bool
		wantName bool
		last     []uint16
		started  bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantName {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			name := utf16.Encode([]rune(tok.(string)))
			if top.started && slices.Compare(top.last, name) >= 0 {
				return fmt.Errorf("name %q does not sort after %q", tok, string(utf16.Decode(top.last)))
			}
			top.last, top.started, top.wantName = name, true, false
			continue
		}
		if top != nil && top.object {
			top.wantName = true // this token starts the member's value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantName: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// TestCanonicalSyntaxCheck makes sure the property checks used above can
// fail: each bad text breaks one rule of RFC 8785.
func TestCanonicalSyntaxCheck(t *testing.T) {
	good := []string{
		`{"":3,"10":1,"9":2}`,
		"{\"😀\":2,\"\ue000\":1}",
		`["\u001f\b\f\n\r\t\"\\","é€😀",[],{},{"a":{"b":[1,{"c":null}]}}]`,
		"\"\u007f\u2028\"",
	}
	bad := []string{
		`{"a": 1}`,
		"[1,\n2]",
		`["\/"]`,
		`["\u00e9"]`,
		`["\u001F"]`,
		`["\u000a"]`,
		`{"b":1,"a":2}`,
		`{"a":1,"a":2}`,
		"{\"\ue000\":1,\"😀\":2}",
		`[{"a":{"y":1,"x":2}}]`,
	}
	for _, s := range good {
		if err := checkCanonicalSyntax([]byte(s)); err != nil {
			t.Errorf("%q: %v, want no error", s, err)
		}
	}
	for _, s := range bad {
		if err := checkCanonicalSyntax([]byte(s)); err == nil {
			t.Errorf("%q: no error, want one", s)
		}
	}
}
