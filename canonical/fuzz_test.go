package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{"b":1,"a":[1,2.50,{"z":null,"y":1e21}],"c":"\u0041\n"}`,
	`{"\ue000":1,"\ud83d\ude00":2,"\u0061":3}`,
	`[-0, 1e-7, 0.000001, 5e-324, 12345678901234567890, 9007199254740993]`,
	`"\"\\\/\b\f\n\r\t\u001f\u2028"`,
	`{"a":1,"\u0061":2}`, `[1,]`, `01`, `1e400`, `NaN`, "\"\xc0\xaf\"", `"\ud800"`,
	`[[[[[[[[[[]]]]]]]]]]`, ` true `, `{"":{"":{"":[]}}}`,
	`["\uffff"]`, "[\"\xef\xbf\xbe\"]", `{"\udbff\udfff":1}`, "{\"a\xef\xb7\x90\":0}", "[\"\U0010FFFD\ufdef\"]",
	// Numbers longer than strconv.ParseFloat reads right (golang/go#42436).
	`{"amount":1` + strings.Repeat("0", 800) + `e-800}`,
	`[0.` + strings.Repeat("0", 20000) + `9e20000,-2` + strings.Repeat("0", 1000) + `E-1000]`,
	`[1.` + strings.Repeat("0", 900) + `1,` + halfOne.above(900) + `,` + halfWidestEven.above(100) + `]`,
	`1` + strings.Repeat("0", 1000) + `e-999999999999`,
}

// FuzzTransform checks that Transform never panics, that canonical form is a
// fixed point, and that it decodes with encoding/json to the same value as
// the input. encoding/json accepts Unicode noncharacters, as Transform does
// by default; Options.RefuseNoncharacters is checked against package
// unicode's Noncharacter_Code_Point table: it gives the same output as
// Transform for a value without any, and refuses one that has some with an
// ErrNoncharacter pointing at one.
func FuzzTransform(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, name := range []string{"arrays", "french", "structures", "unicode", "values", "weird"} {
		if b, err := os.ReadFile("testdata/jcs/input/" + name + ".json"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Transform(src)
		strictOut, strictErr := Options{RefuseNoncharacters: true}.Transform(src)
		if strictErr != nil {
			var se *SyntaxError
			if !errors.As(strictErr, &se) || se.Offset < 0 || se.Offset > int64(len(src)) {
				t.Fatalf("RefuseNoncharacters: error %v is not a *SyntaxError within the input", strictErr)
			}
			if errors.Is(strictErr, ErrNoncharacter) {
				if r, ok := charAt(src, int(se.Offset)); !ok || !unicode.Is(unicode.Noncharacter_Code_Point, r) {
					t.Fatalf("%v, but the character there is %U (decoded: %v)", strictErr, r, ok)
				}
			}
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(src)) {
				t.Fatalf("error %v is not a *SyntaxError within the input", err)
			}
			if errors.Is(err, ErrNoncharacter) {
				t.Fatalf("ErrNoncharacter without RefuseNoncharacters: %v", err)
			}
			if strictErr == nil {
				t.Fatalf("refused (%v), but accepted with RefuseNoncharacters: %q", err, strictOut)
			}
			return
		}
		again, err := Transform(out)
		if err != nil {
			t.Fatalf("Transform of canonical %q: %v", out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
		if exact, err := (Options{ExactNumbers: true}).Transform(out); err != nil || !bytes.Equal(exact, out) {
			t.Fatalf("canonical form %q refused by ExactNumbers: %v", out, err)
		}
		in, err := decodeJSON(src)
		if err != nil {
			t.Fatalf("encoding/json refuses input that Transform took: %v", err)
		}
		res, err := decodeJSON(out)
		if err != nil {
			t.Fatalf("encoding/json refuses canonical %q: %v", out, err)
		}
		if !sameValue(in, res) {
			t.Fatalf("values differ:\n in %#v\nout %#v", in, res)
		}
		if s, ok := findNoncharacter(in); ok {
			if !errors.Is(strictErr, ErrNoncharacter) {
				t.Fatalf("RefuseNoncharacters: %q, %v for a value with a noncharacter in %q", strictOut, strictErr, s)
			}
		} else if strictErr != nil || !bytes.Equal(strictOut, out) {
			t.Fatalf("RefuseNoncharacters: %q, %v; Transform: %q", strictOut, strictErr, out)
		}
	})
}

// decodeJSON decodes the single JSON value src with encoding/json, numbers
// kept as their text: encoding/json reads numbers with strconv.ParseFloat,
// which misreads some long ones (golang/go#42436).
func decodeJSON(src []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the value: %v", err)
	}
	return v, nil
}

// sameValue reports whether the decoded JSON values a and b are equal, with
// numbers compared by the binary64 that exact arithmetic rounds them to.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, oka := ratFloat(string(a))
		fb, okb := ratFloat(string(b))
		return oka && okb && fa == fb
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// charAt decodes the character that starts at src[off], written raw or as
// a \u escape, with the low half of a surrogate pair that follows it.
func charAt(src []byte, off int) (rune, bool) {
	if off >= len(src) {
		return 0, false
	}
	if src[off] != '\\' {
		r, size := utf8.DecodeRune(src[off:])
		return r, size > 1 || r != utf8.RuneError
	}
	hex := func(i int) (rune, bool) {
		if i+6 > len(src) || src[i] != '\\' || src[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(src[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex(off)
	if ok && utf16.IsSurrogate(r) {
		var lo rune
		if lo, ok = hex(off + 6); ok {
			r = utf16.DecodeRune(r, lo)
		}
	}
	return r, ok
}

// findNoncharacter returns a string or member name of the decoded JSON
// value v that holds a Unicode noncharacter.
func findNoncharacter(v any) (string, bool) {
	has := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Noncharacter_Code_Point, r) }) >= 0
	}
	switch v := v.(type) {
	case string:
		return v, has(v)
	case []any:
		for _, e := range v {
			if s, ok := findNoncharacter(e); ok {
				return s, true
			}
		}
	case map[string]any:
		for k, e := range v {
			if has(k) {
				return k, true
			}
			if s, ok := findNoncharacter(e); ok {
				return s, true
			}
		}
	}
	return "", false
}

// FuzzFormatFloat checks that FormatFloat reads back as the same binary64
// and that Transform leaves its output as it is.
func FuzzFormatFloat(f *testing.F) {
	for _, bits := range []uint64{0, 1, 0x7fefffffffffffff, 0x4340000000000000, 0x444b1ae4d6e2ef50, 0x3eb0c6f7a0b5ed8c, 0xbecbf647612f3696} {
		f.Add(bits)
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		s, err := FormatFloat(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if err == nil {
				t.Fatalf("FormatFloat(%v) = %q, want an error", x, s)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		y, err := strconv.ParseFloat(s, 64)
		if err != nil || (y != x && !(x == 0 && y == 0)) {
			t.Fatalf("FormatFloat(%016x) = %q reads back as %v, %v", bits, s, y, err)
		}
		out, err := Transform([]byte(s))
		if err != nil || string(out) != s {
			t.Fatalf("Transform(%q) = %q, %v", s, out, err)
		}
	})
}

// FuzzExactNumbers checks Options.ExactNumbers against exact rational
// arithmetic: a number passes exactly when its written and printed forms
// are the same rational number.
func FuzzExactNumbers(f *testing.F) {
	for _, s := range []string{"0.1", "1.50", "1e2", "-0", "9007199254740993", "0.10000000000000000555", "1e-400", "12345678901234567890", "123.456e-2",
		"1" + strings.Repeat("0", 800) + "e-800", "1" + strings.Repeat("0", 800) + "1e-801", "0." + strings.Repeat("0", 900) + "25e900",
		"1.5" + strings.Repeat("0", 1000), halfOne.exact(900), halfMinSub.above(100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain, err := Transform([]byte(s))
		if err != nil || len(s) > 4096 || !isNumberText(s) {
			return
		}
		// big.Rat would build 10^exp in full: keep exponents within what
		// the digits can bring back into binary64's range.
		if i := bytes.IndexAny([]byte(s), "eE"); i >= 0 {
			if e, err := strconv.Atoi(s[i+1:]); err != nil || e > 400+len(s) || e < -400-len(s) {
				return
			}
		}
		w, ok1 := new(big.Rat).SetString(s)
		p, ok2 := new(big.Rat).SetString(string(plain))
		if !ok1 || !ok2 {
			t.Fatalf("big.Rat cannot read %q or %q", s, plain)
		}
		same := w.Cmp(p) == 0
		exact, err := (Options{ExactNumbers: true}).Transform([]byte(s))
		switch {
		case same && err != nil:
			t.Fatalf("%q prints as the same number %q, yet ExactNumbers refused: %v", s, plain, err)
		case !same && !errors.Is(err, ErrInexactNumber):
			t.Fatalf("%q prints as another number %q, yet ExactNumbers gave %q, %v", s, plain, exact, err)
		case same && !bytes.Equal(exact, plain):
			t.Fatalf("ExactNumbers output %q differs from %q", exact, plain)
		}
	})
}

// FuzzLongNumbers builds numbers of hundreds or thousands of digits, which
// random bytes seldom reach: digits, a run of up to 4095 zeros or nines,
// more digits, a point anywhere among them and any exponent. Transform must
// read each to the binary64 that exact arithmetic rounds it to (ratFloat),
// refuse it with ErrNumberOverflow when that is beyond binary64, and
// ExactNumbers must accept it exactly when it prints as the same decimal.
func FuzzLongNumbers(f *testing.F) {
	// point is how many of the digits precede the point.
	f.Add(false, "1", uint16(800), false, "", uint16(801), int64(-800))
	f.Add(true, "2", uint16(1000), false, "", uint16(1001), int64(-1000))
	f.Add(false, "0", uint16(4000), false, "9", uint16(1), int64(4000))
	f.Add(false, "1", uint16(1000), false, "", uint16(1001), int64(-999999999999))
	f.Add(false, halfOne.n.String(), uint16(900), false, "1", uint16(955), int64(halfOne.exp-901))
	f.Add(false, new(big.Int).Sub(halfWidest.n, big.NewInt(1)).String(), uint16(900), true, "", uint16(1668), int64(halfWidest.exp-900))
	f.Add(false, halfMax.n.String(), uint16(1000), false, "", uint16(309), int64(0))
	f.Fuzz(func(t *testing.T, negative bool, head string, run uint16, nines bool, tail string, point uint16, exp int64) {
		digits := asDigits(head) + strings.Repeat(map[bool]string{false: "0", true: "9"}[nines], int(run%4096)) + asDigits(tail)
		if digits == "" {
			return
		}
		p := int(point) % (len(digits) + 1)
		var b strings.Builder
		if negative {
			b.WriteByte('-')
		}
		if ip := strings.TrimLeft(digits[:p], "0"); ip != "" {
			b.WriteString(ip)
		} else {
			b.WriteByte('0')
		}
		if p < len(digits) {
			b.WriteString("." + digits[p:])
		}
		b.WriteString("e" + strconv.FormatInt(exp, 10))
		s := b.String()

		want, ok := ratFloat(s)
		got, err := Transform([]byte(s))
		if !ok {
			if !errors.Is(err, ErrNumberOverflow) {
				t.Fatalf("%.80s… (%d bytes) = %q, %v; want ErrNumberOverflow", s, len(s), got, err)
			}
			return
		}
		f, perr := strconv.ParseFloat(string(got), 64) // short: ParseFloat reads it right
		if err != nil || perr != nil || f != want {
			t.Fatalf("%.80s… (%d bytes) = %q, %v; want %v", s, len(s), got, err, want)
		}
		exact, err := (Options{ExactNumbers: true}).Transform([]byte(s))
		switch same := sameNumber(s, string(got)); {
		case same && (err != nil || !bytes.Equal(exact, got)):
			t.Fatalf("%.80s… prints as the same number %q, yet ExactNumbers gave %q, %v", s, got, exact, err)
		case !same && !errors.Is(err, ErrInexactNumber):
			t.Fatalf("%.80s… prints as another number %q, yet ExactNumbers gave %q, %v", s, got, exact, err)
		}
	})
}

// asDigits maps each byte of s that is not a decimal digit to one.
func asDigits(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !isDigit(c) {
			b[i] = '0' + c%10
		}
	}
	return string(b)
}

func isNumberText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return len(s) > 0
}
