package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// noncharacters lists the Unicode noncharacters from their definition in
// the Unicode Standard, section 23.7: the 32 code points U+FDD0 to U+FDEF,
// and the last two code points, xxFFFE and xxFFFF, of each of the 17 planes.
func noncharacters() []rune {
	var rs []rune
	for r := rune(0xFDD0); r <= 0xFDEF; r++ {
		rs = append(rs, r)
	}
	for plane := rune(0); plane <= 0x10; plane++ {
		rs = append(rs, plane<<16|0xFFFE, plane<<16|0xFFFF)
	}
	return rs
}

// TestNoncharacterList checks the list the other tests use against the
// Noncharacter_Code_Point property of package unicode (the Unicode
// Character Database's PropList.txt), so that neither source can drift.
func TestNoncharacterList(t *testing.T) {
	list := noncharacters()
	if len(list) != 66 {
		t.Fatalf("%d noncharacters, want 66", len(list))
	}
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.Is(unicode.Noncharacter_Code_Point, r) {
			if n >= len(list) || list[n] != r {
				t.Fatalf("unicode.Noncharacter_Code_Point has U+%04X, the list does not have it at index %d", r, n)
			}
			n++
		}
	}
	if n != len(list) {
		t.Errorf("unicode.Noncharacter_Code_Point has %d code points, the list %d", n, len(list))
	}
}

// jsonEscape spells r as a JSON \u escape, a surrogate pair above U+FFFF,
// with upper- or lower-case hex digits.
func jsonEscape(r rune, upper bool) string {
	format := `\u%04x`
	if upper {
		format = `\u%04X`
	}
	if r < 0x10000 {
		return fmt.Sprintf(format, r)
	}
	hi, lo := utf16.EncodeRune(r)
	return fmt.Sprintf(format+format, hi, lo)
}

// entryPoints are the exported ways into the scanner with noncharacters
// accepted (the default), each shaped as Transform. Marshal gets the text
// as a json.RawMessage, which json.Marshal copies unchanged when it has no
// whitespace and no <, >, & or U+2028/9, so the offsets stay those of the
// text.
var entryPoints = []struct {
	name string
	fn   func(t *testing.T, src []byte) ([]byte, error)
}{
	{"Transform", func(_ *testing.T, src []byte) ([]byte, error) { return Transform(src) }},
	{"Append", func(t *testing.T, src []byte) ([]byte, error) { return appendChecked(t, Append, src) }},
	{"Options.Transform", func(_ *testing.T, src []byte) ([]byte, error) {
		return Options{MaxDepth: 2, ExactNumbers: true}.Transform(src)
	}},
	{"Options.Append", func(t *testing.T, src []byte) ([]byte, error) {
		return appendChecked(t, Options{MaxDepth: 2, ExactNumbers: true}.Append, src)
	}},
	{"Marshal", func(_ *testing.T, src []byte) ([]byte, error) { return Marshal(json.RawMessage(src)) }},
	{"Options.Marshal", func(_ *testing.T, src []byte) ([]byte, error) {
		return Options{MaxDepth: 2, ExactNumbers: true}.Marshal(json.RawMessage(src))
	}},
}

// strict is the Options that refuses noncharacters, with the other limits
// set too, so that they are seen not to interfere.
var strict = Options{MaxDepth: 2, ExactNumbers: true, RefuseNoncharacters: true}

// strictEntryPoints are the exported ways into the scanner with
// Options.RefuseNoncharacters set.
var strictEntryPoints = []struct {
	name string
	fn   func(t *testing.T, src []byte) ([]byte, error)
}{
	{"Options.Transform", func(_ *testing.T, src []byte) ([]byte, error) { return strict.Transform(src) }},
	{"Options.Append", func(t *testing.T, src []byte) ([]byte, error) { return appendChecked(t, strict.Append, src) }},
	{"Options.Marshal", func(_ *testing.T, src []byte) ([]byte, error) { return strict.Marshal(json.RawMessage(src)) }},
}

// appendChecked calls an Append after a prefix and returns what it added;
// on error the prefix must come back unchanged.
func appendChecked(t *testing.T, appendFn func(dst, src []byte) ([]byte, error), src []byte) ([]byte, error) {
	t.Helper()
	const prefix = "prefix:"
	out, err := appendFn([]byte(prefix), src)
	if string(out[:min(len(out), len(prefix))]) != prefix || err != nil && len(out) != len(prefix) {
		t.Errorf("Append(%q, %q) = %q, %v: the prefix was not kept as it was", prefix, src, out, err)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return out[len(prefix):], nil
}

// noncharCases returns, for the character spelled c (raw or escaped),
// documents that hold it in a string and in a member name, with the byte
// offset where c starts and the canonical form, in which the character
// raw stands for c.
func noncharCases(c, raw string) []struct {
	where  string
	in     string
	offset int64
	want   string
} {
	return []struct {
		where  string
		in     string
		offset int64
		want   string
	}{
		{"string in array", `[1,"x` + c + `y"]`, 5, `[1,"x` + raw + `y"]`},
		{"member value", `{"b":0,"a":"` + c + `"}`, 12, `{"a":"` + raw + `","b":0}`},
		{"member name", `{"a":1,"b` + c + `":2}`, 9, `{"a":1,"b` + raw + `":2}`},
		{"first name", `{"` + c + `":[]}`, 2, `{"` + raw + `":[]}`},
	}
}

// TestNoncharacterAccepted checks that by default every noncharacter, raw
// or escaped, in a string or a member name, comes out as raw UTF-8, as V8
// writes it (see TestNoncharacterTable for V8's own outputs).
func TestNoncharacterAccepted(t *testing.T) {
	for i, r := range noncharacters() {
		for _, form := range []struct{ name, c string }{
			{"raw", string(r)},
			{"escaped", jsonEscape(r, i%2 == 0)},
		} {
			for _, tc := range noncharCases(form.c, string(r)) {
				for _, ep := range entryPoints {
					out, err := ep.fn(t, []byte(tc.in))
					if err != nil || string(out) != tc.want {
						t.Errorf("%s U+%04X %s in a %s: %s(%q) = %q, %v; want %q", ep.name, r, form.name, tc.where, ep.name, tc.in, out, err, tc.want)
					}
				}
			}
		}
	}
}

// TestNoncharacterRefused checks that Options.RefuseNoncharacters refuses
// every noncharacter, raw or escaped, in a string or a member name, at the
// offset where it starts.
func TestNoncharacterRefused(t *testing.T) {
	for i, r := range noncharacters() {
		for _, form := range []struct{ name, c string }{
			{"raw", string(r)},
			{"escaped", jsonEscape(r, i%2 == 0)},
		} {
			for _, tc := range noncharCases(form.c, string(r)) {
				for _, ep := range strictEntryPoints {
					out, err := ep.fn(t, []byte(tc.in))
					what := fmt.Sprintf("%s U+%04X %s in a %s (%q)", ep.name, r, form.name, tc.where, tc.in)
					var se *SyntaxError
					switch {
					case err == nil:
						t.Errorf("%s = %q, want ErrNoncharacter at %d", what, out, tc.offset)
					case !errors.Is(err, ErrNoncharacter) || !errors.As(err, &se):
						t.Errorf("%s: %v, want ErrNoncharacter at %d", what, err, tc.offset)
					case se.Err != ErrNoncharacter || se.Offset != tc.offset:
						t.Errorf("%s: %v (Err %v, Offset %d), want ErrNoncharacter at %d", what, err, se.Err, se.Offset, tc.offset)
					case out != nil:
						t.Errorf("%s: output %q alongside the error", what, out)
					}
				}
			}
		}
	}
}

// TestNoncharacterMarshalGo checks Go strings and map keys holding a
// noncharacter: encoding/json writes them through unescaped; Marshal keeps
// them, and Options.Marshal with RefuseNoncharacters refuses its output.
func TestNoncharacterMarshalGo(t *testing.T) {
	for _, r := range noncharacters() {
		c := string(r)
		for _, tc := range []struct {
			where  string
			v      any
			offset int64
			want   string
		}{
			{"string", "x" + c, 2, `"x` + c + `"`},
			{"map key", map[string]int{c: 1, "a": 2}, 8, `{"a":2,"` + c + `":1}`},
			{"struct field", struct {
				B string `json:"b"`
				A string `json:"a"`
			}{c + "!", "x"}, 6, `{"a":"x","b":"` + c + `!"}`},
		} {
			if out, err := Marshal(tc.v); err != nil || string(out) != tc.want {
				t.Errorf("Marshal of a %s with U+%04X = %q, %v; want %q", tc.where, r, out, err, tc.want)
			}
			out, err := Options{RefuseNoncharacters: true}.Marshal(tc.v)
			var se *SyntaxError
			if !errors.Is(err, ErrNoncharacter) || !errors.As(err, &se) || se.Offset != tc.offset {
				t.Errorf("Options.Marshal of a %s with U+%04X = %q, %v; want ErrNoncharacter at %d", tc.where, r, out, err, tc.offset)
			}
		}
	}
}

func TestNoncharacterMessage(t *testing.T) {
	_, err := Options{RefuseNoncharacters: true}.Transform([]byte(`{"a":"\udbff\udfff"}`))
	if got, want := fmt.Sprint(err), "canonical: Unicode noncharacter in string at offset 6"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestNoncharacterNeighbours checks that the code points next to the
// noncharacter ranges stay valid in strings and names, raw and escaped, and
// come out as raw UTF-8. (U+EFFFF is not among them: it ends plane 14, so it
// is a noncharacter; U+EFFFD is the last valid code point there.)
func TestNoncharacterNeighbours(t *testing.T) {
	for i, r := range []rune{0xFDCF, 0xFDF0, 0xFFFD, 0xE000, 0x10000, 0x1FFFD, 0x20000, 0xEFFFD, 0xF0000, 0x10FFFD} {
		raw := string(r)
		for _, c := range []string{raw, jsonEscape(r, i%2 == 0)} {
			for _, tc := range []struct{ in, want string }{
				{`[1,"x` + c + `y"]`, `[1,"x` + raw + `y"]`},
				{`{"b":0,"a":"` + c + `"}`, `{"a":"` + raw + `","b":0}`},
				{`{"b` + c + `":2,"a":1}`, `{"a":1,"b` + raw + `":2}`},
			} {
				for _, ep := range append(entryPoints, strictEntryPoints...) {
					got, err := ep.fn(t, []byte(tc.in))
					if err != nil || string(got) != tc.want {
						t.Errorf("%s(%q) = %q, %v; want %q", ep.name, tc.in, got, err, tc.want)
					}
				}
			}
		}
	}
}

// TestEveryCodePoint runs every Unicode scalar value through a string, raw
// (from U+0080, below which raw bytes have their own rules) and escaped:
// by default every one is accepted and written as raw UTF-8 (or as RFC 8785
// escapes the controls, '"' and '\\'), and Options.RefuseNoncharacters
// refuses exactly the code points that package unicode marks
// Noncharacter_Code_Point.
func TestEveryCodePoint(t *testing.T) {
	if raceEnabled {
		t.Skip("four million single-goroutine calls take twenty seconds under the race detector and show it nothing; run without -race")
	}
	refuse := Options{RefuseNoncharacters: true}
	var src, dst, want []byte
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf16.IsSurrogate(r) {
			continue
		}
		nonchar := unicode.Is(unicode.Noncharacter_Code_Point, r)
		spellings := []string{jsonEscape(r, r%2 == 0)}
		if r >= utf8.RuneSelf {
			spellings = append(spellings, string(r))
		}
		want = append(want[:0], `["`...)
		switch {
		case r == '"' || r == '\\':
			want = append(want, '\\', byte(r))
		case r < 0x20: // RFC 8785 section 3.2.2.2
			named := map[rune]string{'\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
			if e, ok := named[r]; ok {
				want = append(want, e...)
			} else {
				want = fmt.Appendf(want, `\u%04x`, r)
			}
		default:
			want = utf8.AppendRune(want, r)
		}
		want = append(want, `"]`...)
		for _, c := range spellings {
			src = append(append(append(src[:0], `["`...), c...), `"]`...)
			var err error
			dst, err = Append(dst[:0], src)
			if err != nil || !bytes.Equal(dst, want) {
				if bad++; bad <= 10 {
					t.Errorf("U+%04X as %q: %q, %v; want %q", r, c, dst, err, want)
				}
			}
			dst, err = refuse.Append(dst[:0], src)
			var se *SyntaxError
			ok := err == nil && bytes.Equal(dst, want)
			if nonchar {
				ok = errors.Is(err, ErrNoncharacter) && errors.As(err, &se) && se.Offset == 2
			}
			if !ok {
				if bad++; bad <= 10 {
					t.Errorf("RefuseNoncharacters: U+%04X as %q: %q, %v (noncharacter: %v)", r, c, dst, err, nonchar)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d wrong results", bad)
	}
}

// TestNoncharacterAfterValidMultibyte makes sure the raw check looks at
// each character and not only the first of a run.
func TestNoncharacterAfterValidMultibyte(t *testing.T) {
	in := `["` + strings.Repeat("é€😀", 3) + "\U0010FFFF" + `"]`
	_, err := Options{RefuseNoncharacters: true}.Transform([]byte(in))
	var se *SyntaxError
	if want := int64(2 + 3*len("é€😀")); !errors.Is(err, ErrNoncharacter) || !errors.As(err, &se) || se.Offset != want {
		t.Errorf("Transform(%q): %v, want ErrNoncharacter at %d", in, err, want)
	}
}
