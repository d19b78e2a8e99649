package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"reflect"
	"strconv"
	"testing"
)

var fuzzSeeds = []string{
	`{"b":1,"a":[1,2.50,{"z":null,"y":1e21}],"c":"\u0041\n"}`,
	`{"\ue000":1,"\ud83d\ude00":2,"\u0061":3}`,
	`[-0, 1e-7, 0.000001, 5e-324, 12345678901234567890, 9007199254740993]`,
	`"\"\\\/\b\f\n\r\t\u001f\u2028"`,
	`{"a":1,"\u0061":2}`, `[1,]`, `01`, `1e400`, `NaN`, "\"\xc0\xaf\"", `"\ud800"`,
	`[[[[[[[[[[]]]]]]]]]]`, ` true `, `{"":{"":{"":[]}}}`,
}

// FuzzTransform checks that Transform never panics, that canonical form is a
// fixed point, and that it decodes with encoding/json to the same value as
// the input.
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
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(src)) {
				t.Fatalf("error %v is not a *SyntaxError within the input", err)
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
		var in, res any
		if err := json.Unmarshal(src, &in); err != nil {
			t.Fatalf("encoding/json refuses input that Transform took: %v", err)
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("encoding/json refuses canonical %q: %v", out, err)
		}
		if !reflect.DeepEqual(in, res) {
			t.Fatalf("values differ:\n in %#v\nout %#v", in, res)
		}
	})
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
	for _, s := range []string{"0.1", "1.50", "1e2", "-0", "9007199254740993", "0.10000000000000000555", "1e-400", "12345678901234567890", "123.456e-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain, err := Transform([]byte(s))
		if err != nil || len(s) > 64 || !isNumberText(s) {
			return
		}
		// big.Rat would build 10^exp in full: keep exponents small.
		if i := bytes.IndexAny([]byte(s), "eE"); i >= 0 {
			if e, err := strconv.Atoi(s[i+1:]); err != nil || e > 400 || e < -400 {
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

func isNumberText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return len(s) > 0
}
