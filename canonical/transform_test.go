package canonical

import (
	"bytes"
	"errors"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestTransform(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"scalar true", ` true `, `true`},
		{"scalar null", "\t\r\nnull\n", `null`},
		{"empty containers", `[ { } , [ ] ]`, `[{},[]]`},
		{"whitespace", " { \"a\" :\n[ 1 ,\t2 ] } ", `{"a":[1,2]}`},
		{"sorted by code unit", `{"b":1,"a":2,"B":3,"":4}`, `{"":4,"B":3,"a":2,"b":1}`},
		{"prefix sorts first", `{"ab":1,"a":2}`, `{"a":2,"ab":1}`},
		// U+E000 is one unit 0xE000; U+1F600 is 0xD83D 0xDE00, so it sorts first.
		{"supplementary before U+E000", `{"\ue000":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":2,\"\ue000\":1}"},
		{"supplementary before U+FFFD", "{\"\ufffd\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\ufffd\":1}"},
		{"BMP below U+E000 before supplementary", "{\"\U0001F600\":1,\"\ud7ff\":2}", "{\"\ud7ff\":2,\"\U0001F600\":1}"},
		{"nested objects sorted", `{"z":{"y":1,"x":2},"a":[{"d":1,"c":2}]}`, `{"a":[{"c":2,"d":1}],"z":{"x":2,"y":1}}`},
		{"escaped names sorted by value", `{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{"short escapes kept", `"\"\\\b\f\n\r\t"`, `"\"\\\b\f\n\r\t"`},
		{"other controls lowercase hex", `"\u001F\u0000\u000B"`, `"\u001f\u0000\u000b"`},
		{"solidus unescaped", `"\/"`, `"/"`},
		{"U+2028 raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"non-ASCII raw", `"\u00e9\u20AC"`, `"é€"`},
		{"DEL raw", `"\u007f"`, "\"\x7f\""},
		{"raw UTF-8 kept", `"é😀"`, `"é😀"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"minus zero", `-0`, `0`},
		{"minus zero fraction", `-0.0e5`, `0`},
		{"1e21", `1e21`, `1e+21`},
		{"1e20", `1e20`, `100000000000000000000`},
		{"1e-7", `1e-7`, `1e-7`},
		{"0.000001", `0.000001`, `0.000001`},
		{"5e-324", `5e-324`, `5e-324`},
		{"big integer", `12345678901234567890`, `12345678901234567000`},
		{"2^53+1", `9007199254740993`, `9007199254740992`},
		{"trailing zeros", `1.50`, `1.5`},
		{"upper E", `1E2`, `100`},
		{"plus exponent", `2.5e+3`, `2500`},
		{"fraction digits", `0.10000000000000000555`, `0.1`},
		{"underflow to zero", `1e-400`, `0`},
		{"15-digit fast path", `-123456789012345`, `-123456789012345`},
		{"16 digits", `1234567890123456`, `1234567890123456`},
		{"max binary64", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"unsorted inside unsorted", `{"b":{"d":[{"f":1,"e":2}],"c":3},"a":{"h":4,"g":5}}`, `{"a":{"g":5,"h":4},"b":{"c":3,"d":[{"e":2,"f":1}]}}`},
		{"sorted around unsorted", `{"a":[{"z":1,"y":2},{"x":{"w":1,"v":2}}],"b":0}`, `{"a":[{"y":2,"z":1},{"x":{"v":2,"w":1}}],"b":0}`},
		{"deep unsorted chain", `{"b":{"b":{"b":"x","a":3},"a":2},"a":1}`, `{"a":1,"b":{"a":2,"b":{"a":3,"b":"x"}}}`},
		{"first member object", `{"b":1,"a":{"d":1,"c":2}}`, `{"a":{"c":2,"d":1},"b":1}`},
		{"many members", `{"c":3,"b":2,"a":1,"e":5,"d":4}`, `{"a":1,"b":2,"c":3,"d":4,"e":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Transform([]byte(tt.in))
			if err != nil {
				t.Fatalf("Transform(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Transform(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTransformRefusals(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		err    error
		offset int64
	}{
		{"empty", ``, ErrEmpty, 0},
		{"only whitespace", " \n\t", ErrEmpty, 3},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, ErrDuplicateName, 7},
		{"duplicate plain", `{"a":1,"b":2,"a":3}`, ErrDuplicateName, 13},
		{"duplicate second occurrence of three", `{"x":0,"a":1,"a":2,"a":3}`, ErrDuplicateName, 13},
		{"duplicate nested", `[{"k":1,"k":1}]`, ErrDuplicateName, 8},
		{"lone high surrogate", `["\ud800"]`, ErrLoneSurrogate, 2},
		{"lone high before char", `"\ud800x"`, ErrLoneSurrogate, 1},
		{"high then non-surrogate escape", `"\ud800\u0041"`, ErrLoneSurrogate, 1},
		{"high then high", `"\ud800\ud800"`, ErrLoneSurrogate, 1},
		{"lone low surrogate", `"a\udc00"`, ErrLoneSurrogate, 2},
		{"reversed pair", `"\ude00\ud83d"`, ErrLoneSurrogate, 1},
		{"high at end of input", `"\ud800`, ErrLoneSurrogate, 1},
		{"overlong slash", "\"\xc0\xaf\"", ErrInvalidUTF8, 1},
		{"overlong 3 bytes", "\"\xe0\x80\xaf\"", ErrInvalidUTF8, 1},
		{"encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, 1},
		{"truncated sequence", "\"a\xe2\x82\"", ErrInvalidUTF8, 2},
		{"truncated at end", "\"a\xe2\x82", ErrInvalidUTF8, 2},
		{"stray continuation", "\"\x80\"", ErrInvalidUTF8, 1},
		{"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", ErrInvalidUTF8, 1},
		{"invalid byte in name", "{\"\xff\":1}", ErrInvalidUTF8, 2},
		{"overflow", `1e400`, ErrNumberOverflow, 0},
		{"negative overflow", `[-1e400]`, ErrNumberOverflow, 1},
		{"overflow by rounding", `1.7976931348623159e308`, ErrNumberOverflow, 0},
		{"NaN", `NaN`, ErrNonFinite, 0},
		{"Infinity", `[Infinity]`, ErrNonFinite, 1},
		{"minus Infinity", `{"a":-Infinity}`, ErrNonFinite, 5},
		{"leading zero", `01`, ErrLeadingZero, 0},
		{"negative leading zero", `[-012]`, ErrLeadingZero, 1},
		{"double zero", `00`, ErrLeadingZero, 0},
		{"trailing comma array", `[1,]`, ErrTrailingComma, 2},
		{"trailing comma object", `{"a":1 , }`, ErrTrailingComma, 7},
		{"trailing garbage", `[1] x`, ErrTrailingData, 4},
		{"two values", `1 2`, ErrTrailingData, 2},
		{"two objects", `{}{}`, ErrTrailingData, 2},
		{"raw tab in string", "\"a\tb\"", ErrControlChar, 2},
		{"raw NUL in string", "\"\x00\"", ErrControlChar, 1},
		{"raw newline in name", "{\"\n\":1}", ErrControlChar, 2},
		{"bad escape", `"\x"`, ErrInvalidEscape, 1},
		{"bad hex", `"\u12G4"`, ErrInvalidEscape, 1},
		{"bad hex in low half", `"\ud83d\uZe00"`, ErrInvalidEscape, 7},
		{"single quote escape", `"\'"`, ErrInvalidEscape, 1},
		{"dot without digits", `1.`, ErrInvalidNumber, 0},
		{"exponent without digits", `1e`, ErrInvalidNumber, 0},
		{"exponent sign only", `[1e+]`, ErrInvalidNumber, 1},
		{"minus alone", `-`, ErrInvalidNumber, 0},
		{"minus letter", `-a`, ErrInvalidNumber, 0},
		{"leading dot", `.5`, ErrSyntax, 0},
		{"plus sign", `+1`, ErrSyntax, 0},
		{"hex number", `0x10`, ErrTrailingData, 1},
		{"missing comma", `[1 2]`, ErrSyntax, 3},
		{"missing colon", `{"a" 1}`, ErrSyntax, 5},
		{"unquoted name", `{a:1}`, ErrSyntax, 1},
		{"missing comma in object", `{"a":1 "b":2}`, ErrSyntax, 7},
		{"number name", `{1:1}`, ErrSyntax, 1},
		{"bad literal", `trux`, ErrSyntax, 0},
		{"capital literal", `True`, ErrSyntax, 0},
		{"byte outside string", "[\xff]", ErrSyntax, 1},
		{"leading comma", `[,1]`, ErrSyntax, 1},
		{"mismatched close", `[1}`, ErrSyntax, 2},
		{"open array", `[`, ErrUnexpectedEnd, 1},
		{"open object value", `{"a":`, ErrUnexpectedEnd, 5},
		{"open object name", `{"a"`, ErrUnexpectedEnd, 4},
		{"open string", `"abc`, ErrUnexpectedEnd, 4},
		{"cut literal", `[tru`, ErrUnexpectedEnd, 4},
		{"after comma", `[1,`, ErrUnexpectedEnd, 3},
		{"after member", `{"a":1`, ErrUnexpectedEnd, 6},
		{"cut escape", `"\`, ErrUnexpectedEnd, 2},
		{"cut unicode escape", `"\u12`, ErrUnexpectedEnd, 5},
		{"too deep", strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001), ErrTooDeep, 10_000},
		{"too deep objects", strings.Repeat(`{"a":`, 10_001) + "1" + strings.Repeat("}", 10_001), ErrTooDeep, 50_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Transform([]byte(tt.in))
			if err == nil {
				t.Fatalf("Transform(%q) = %q, want error %v", tt.in, out, tt.err)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("Transform(%q) error %v, want %v", tt.in, err, tt.err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
			}
			if se.Offset != tt.offset {
				t.Errorf("Transform(%q) offset %d, want %d (%v)", tt.in, se.Offset, tt.offset, err)
			}
			if out != nil {
				t.Errorf("output %q alongside error", out)
			}
		})
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Transform([]byte(`{"a":1,"a":2}`))
	if got, want := err.Error(), "canonical: duplicate member name at offset 7"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestMaxDepth checks both edges of the default limit, 10,000 levels (as in
// encoding/json and jsontext), for arrays, objects and both interleaved,
// and of limits set in Options.
func TestMaxDepth(t *testing.T) {
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	objects := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	// mixed nests n levels, arrays at even depths and objects with members
	// out of order at odd ones: in is the input, canon its canonical form.
	mixed := func(n int) (in, canon string) {
		var open, shut, copen, cshut []string
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				open, shut = append(open, "[ "), append(shut, "]")
				copen, cshut = append(copen, "["), append(cshut, "]")
			} else {
				open, shut = append(open, `{"b":0,"a":`), append(shut, "}")
				copen, cshut = append(copen, `{"a":`), append(cshut, `,"b":0}`)
			}
		}
		slices.Reverse(shut)
		slices.Reverse(cshut)
		return strings.Join(open, "") + "1" + strings.Join(shut, ""), strings.Join(copen, "") + "1" + strings.Join(cshut, "")
	}
	mixedIn := func(n int) string { in, _ := mixed(n); return in }
	mixedCanon := func(n int) string { _, c := mixed(n); return c }
	tests := []struct {
		name   string
		o      Options
		in     string
		want   string // canonical form, if accepted
		offset int64  // of ErrTooDeep, if refused
	}{
		{"10000 arrays", Options{}, arrays(10_000), arrays(10_000), 0},
		{"10001 arrays", Options{}, arrays(10_001), "", 10_000},
		{"10000 objects", Options{}, objects(10_000), objects(10_000), 0},
		{"10001 objects", Options{}, objects(10_001), "", 50_000},
		{"10000 mixed", Options{}, mixedIn(10_000), mixedCanon(10_000), 0},
		{"10001 mixed", Options{}, mixedIn(10_001), "", 5000 * int64(len("[ ")+len(`{"b":0,"a":`))},
		{"10001 arrays, MaxDepth -1 (the default)", Options{MaxDepth: -1}, arrays(10_001), "", 10_000},
		{"2 arrays, MaxDepth 2", Options{MaxDepth: 2}, `[[1]]`, `[[1]]`, 0},
		{"3 arrays, MaxDepth 2", Options{MaxDepth: 2}, `[[[1]]]`, "", 2},
		{"20000 arrays, MaxDepth 20000", Options{MaxDepth: 20_000}, arrays(20_000), arrays(20_000), 0},
		{"20001 arrays, MaxDepth 20000", Options{MaxDepth: 20_000}, arrays(20_001), "", 20_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.Transform([]byte(tt.in))
			if tt.want != "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("Transform = %.40q…, %v; want %.40q…", got, err, tt.want)
				}
				return
			}
			var se *SyntaxError
			if !errors.Is(err, ErrTooDeep) || !errors.As(err, &se) || se.Offset != tt.offset || got != nil {
				t.Fatalf("Transform = %.40q, %v; want ErrTooDeep at %d", got, err, tt.offset)
			}
		})
	}
}

// TestHugeNesting feeds five million '[': the default limit refuses it at
// the 10,001st, and even a limit above its depth ends in an error, not a
// crash, because the scanner's stack lives on the heap.
func TestHugeNesting(t *testing.T) {
	src := bytes.Repeat([]byte("["), 5_000_000)
	_, err := Transform(src)
	var se *SyntaxError
	if !errors.Is(err, ErrTooDeep) || !errors.As(err, &se) || se.Offset != 10_000 {
		t.Errorf("default limit: %v, want ErrTooDeep at 10000", err)
	}
	_, err = (Options{MaxDepth: 10_000_000}).Transform(src)
	if !errors.Is(err, ErrUnexpectedEnd) || !errors.As(err, &se) || se.Offset != 5_000_000 {
		t.Errorf("limit 10M: %v, want ErrUnexpectedEnd at 5000000", err)
	}
}

func TestExactNumbers(t *testing.T) {
	exact := Options{ExactNumbers: true}
	pass := []struct{ in, want string }{
		{`0.1`, `0.1`}, {`1.50`, `1.5`}, {`1e2`, `100`}, {`-0`, `0`}, {`-0.0e-5`, `0`},
		{`9007199254740992`, `9007199254740992`}, {`1E-7`, `1e-7`}, {`0.000001`, `0.000001`},
		{`1e21`, `1e+21`}, {`100000000000000000000`, `100000000000000000000`},
		{`12345678901234567000`, `12345678901234567000`}, {`5e-324`, `5e-324`},
		{`123.456e-2`, `1.23456`}, {`0.00120`, `0.0012`}, {`-2.5E+10`, `-25000000000`},
		{`[1, 2.0, 3e0]`, `[1,2,3]`},
	}
	for _, p := range pass {
		got, err := exact.Transform([]byte(p.in))
		if err != nil || string(got) != p.want {
			t.Errorf("ExactNumbers %s = %q, %v; want %q", p.in, got, err, p.want)
		}
	}
	refuse := []struct {
		in     string
		offset int64
	}{
		{`9007199254740993`, 0},
		{`0.10000000000000000555`, 0},
		{`1e-400`, 0},
		{`12345678901234567890`, 0},
		{`1152921504606846976`, 0}, // 2^60 exactly: binary64 holds it, ES prints 1152921504606847000
		{`5e-325`, 0},
		{`{"amount":9007199254740993}`, 10},
		{`[1, 0.30000000000000000001]`, 4},
	}
	for _, r := range refuse {
		_, err := exact.Transform([]byte(r.in))
		var se *SyntaxError
		if !errors.Is(err, ErrInexactNumber) || !errors.As(err, &se) || se.Offset != r.offset {
			t.Errorf("ExactNumbers %s: %v, want ErrInexactNumber at %d", r.in, err, r.offset)
		}
		if _, err := Transform([]byte(r.in)); err != nil {
			t.Errorf("default Options %s: %v", r.in, err)
		}
	}
}

func TestAppend(t *testing.T) {
	buf := []byte("prefix:")
	out, err := Append(buf, []byte(`{"b":[1.0],"a":"x"}`))
	if err != nil || string(out) != `prefix:{"a":"x","b":[1]}` {
		t.Fatalf("Append = %q, %v", out, err)
	}
	out, err = Append(out[:7], []byte(`{"a":1,"a":2}`))
	if !errors.Is(err, ErrDuplicateName) || string(out) != "prefix:" {
		t.Errorf("Append on error = %q, %v; want the prefix back", out, err)
	}
}

// TestAllocs pins the allocation profile: Append into a large enough buffer
// allocates nothing, and Transform allocates its result only, however many
// bytes and objects the input has (scratch space comes from a pool).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random; counts are checked without -race")
	}
	// A collection empties sync.Pool, and the 1 MB input triggers them
	// often; keep the collector out of the count.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	src := []byte(`{"z":1,"y":[true,false,null],"x":{"w":"\u00e9"}}`)
	dst := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() { dst, _ = Append(dst[:0], src) }); allocs != 0 {
		t.Errorf("Append with a large enough buffer: %v allocations, want 0", allocs)
	}
	for _, in := range benchInputs {
		src := in.src()
		if allocs := testing.AllocsPerRun(5, func() { _, _ = Transform(src) }); allocs != 1 {
			t.Errorf("Transform(%s): %v allocations, want 1", in.name, allocs)
		}
	}
}

func TestCompareNames(t *testing.T) {
	// Ordered by UTF-16 code units, checked by hand.
	ordered := []string{"", "\x00", "1", "A", "a", "ab", "\u0080", "ö", "\u07ff", "\u0800", "€", "\ud7ff",
		"\U00010000", "\U0001F600", "\U0001F600a", "\U0010FFFF", "\ue000", "\ufb33", "\uffff"}
	for i := range ordered {
		for j := range ordered {
			got := compareNames([]byte(ordered[i]), []byte(ordered[j]))
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Errorf("compareNames(%q, %q) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

// TestConcurrent runs Transform from many goroutines at once so that the
// race detector sees the pooled scratch space shared between calls.
func TestConcurrent(t *testing.T) {
	src := readFile(t, "testdata/jcs/input/weird.json")
	want := readFile(t, "testdata/jcs/output/weird.json")
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 500; i++ {
				got, err := Transform(src)
				if err != nil || !bytes.Equal(got, want) {
					done <- errors.New("mismatch: " + string(got))
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
