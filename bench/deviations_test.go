package bench

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

var printMatrix = flag.Bool("matrix", false, "print the deviation matrix as Markdown (for BENCHMARKS.md)")

// outcome is what an implementation did with one input: its output, or
// refused. The empty outcome in a row means "as the rfc column".
type outcome string

const (
	refused outcome = "refused"
	asRFC   outcome = ""
)

// deviation is one bad or edge-case input and what each implementation
// does with it. rfc is written by hand from RFC 8785 and RFC 7493 (I-JSON,
// which RFC 8785 section 3.1 requires of its input); the other columns are
// the observed behaviour, asserted exactly, so that a peer release that
// changes course fails this test and the matrix in BENCHMARKS.md gets
// updated with it.
type deviation struct {
	name string
	in   string
	rfc  outcome
	why  string // the rule, for the matrix

	idemledger, jsontext, cyberphone, gowebpki outcome
}

// Most inputs are wrapped in an array: cyberphone refuses any top-level
// value that is not an object or an array (see the "top-level scalar"
// rows), which would hide what it does with the value itself.
var deviations = []deviation{
	{name: "invalid UTF-8 byte in a string", in: "[\"\xff\"]", rfc: refused, why: "RFC 7493 2.1",
		cyberphone: "[\"\xff\"]"},
	{name: "invalid UTF-8 byte in a name", in: "{\"\xff\":1}", rfc: refused, why: "RFC 7493 2.1",
		cyberphone: "{\"\xff\":1}"},
	{name: "UTF-8 encoded surrogate (ED A0 80)", in: "[\"\xed\xa0\x80\"]", rfc: refused, why: "RFC 3629 3, RFC 7493 2.1",
		cyberphone: "[\"\xed\xa0\x80\"]"},
	{name: "overlong UTF-8 (C0 AF)", in: "[\"\xc0\xaf\"]", rfc: refused, why: "RFC 3629 3",
		cyberphone: "[\"\xc0\xaf\"]"},
	{name: "lone high surrogate escape", in: `["\ud800"]`, rfc: refused, why: "RFC 7493 2.1"},
	{name: "lone low surrogate escape", in: `["\udc00"]`, rfc: refused, why: "RFC 7493 2.1"},
	{name: "high surrogate escape, then a letter", in: `["\ud800x"]`, rfc: refused, why: "RFC 7493 2.1"},
	{name: "surrogate pair escape", in: `["\ud83d\ude00"]`, rfc: `["😀"]`, why: "RFC 8785 3.2.2.2"},
	// Noncharacters are Unicode scalar values: RFC 8785 section 3.1 does
	// not count them among the I-JSON rules it relies on, and V8 keeps
	// them (strict I-JSON, RFC 7493 2.1, refuses them; in canonical that is
	// Options.RefuseNoncharacters).
	{name: "noncharacter U+FFFF", in: `["\uffff"]`, rfc: "[\"\uffff\"]", why: "RFC 8785 3.1, 3.2.2.2; V8 (RFC 7493 2.1 refuses it)"},
	{name: "noncharacter U+FDD0", in: `["\ufdd0"]`, rfc: "[\"\ufdd0\"]", why: "RFC 8785 3.1, 3.2.2.2; V8 (RFC 7493 2.1 refuses it)"},
	{name: "unescaped control character", in: "[\"a\x00\"]", rfc: refused, why: "RFC 8259 7"},
	{name: "escaped U+2028 U+2029", in: `["\u2028\u2029"]`, rfc: "[\"\u2028\u2029\"]", why: "RFC 8785 3.2.2.2: only < U+0020, \" and \\ stay escaped"},
	{name: "escaped U+001F and U+007F", in: `["\u001f\u007f"]`, rfc: "[\"\\u001f\x7f\"]", why: "RFC 8785 3.2.2.2"},
	{name: `escaped solidus \/`, in: `["\/"]`, rfc: `["/"]`, why: "RFC 8785 3.2.2.2"},
	{name: "upper-case hex escape", in: `["\u00E9"]`, rfc: `["é"]`, why: "RFC 8785 3.2.2.2"},
	{name: "plus sign", in: `[+1]`, rfc: refused, why: "RFC 8259 6",
		cyberphone: `[1]`},
	{name: "leading zero", in: `[01]`, rfc: refused, why: "RFC 8259 6",
		cyberphone: `[1]`},
	{name: "no digit after the point", in: `[1.]`, rfc: refused, why: "RFC 8259 6",
		cyberphone: `[1]`},
	{name: "no digit before the point", in: `[.5]`, rfc: refused, why: "RFC 8259 6",
		cyberphone: `[0.5]`},
	{name: "NaN", in: `[NaN]`, rfc: refused, why: "RFC 8259 6, RFC 8785 3.2.2.3"},
	{name: "overflow 1e400", in: `[1e400]`, rfc: refused, why: "RFC 7493 2.2, RFC 8785 3.2.2.3",
		jsontext: `[1.7976931348623157e+308]`},
	{name: "overflow -1e400", in: `[-1e400]`, rfc: refused, why: "RFC 7493 2.2, RFC 8785 3.2.2.3",
		jsontext: `[-1.7976931348623157e+308]`},
	{name: "underflow 1e-400", in: `[1e-400]`, rfc: `[0]`, why: "rounds to binary64 like any number (RFC 8785 3.2.2.3)"},
	{name: "negative underflow -1e-400", in: `[-1e-400]`, rfc: `[0]`, why: "rounds to -0, printed 0"},
	{name: "minus zero", in: `[-0,-0.0,0e5]`, rfc: `[0,0,0]`, why: "RFC 8785 3.2.2.3 (ECMAScript prints -0 as 0)"},
	{name: "2^53 + 1", in: `[9007199254740993]`, rfc: `[9007199254740992]`, why: "binary64 rounding"},
	{name: "30-digit integer", in: `[123456789012345678901234567890]`, rfc: `[1.2345678901234568e+29]`, why: "RFC 8785 3.2.2.3"},
	{name: "exponent thresholds", in: `[1e21,1E-7,0.000001,1E+2,100e-2]`, rfc: `[1e+21,1e-7,0.000001,100,1]`, why: "ECMAScript Number::toString"},
	{name: "duplicate names", in: `{"a":1,"a":2}`, rfc: refused, why: "RFC 7493 2.3"},
	{name: "duplicate names after unescaping", in: `{"a":1,"\u0061":2}`, rfc: refused, why: "RFC 7493 2.3"},
	{name: "U+E000 vs U+1F600 name order", in: `{"\ue000":1,"\ud83d\ude00":2}`, rfc: "{\"😀\":2,\"\ue000\":1}", why: "RFC 8785 3.2.3: UTF-16 code units (D83D < E000)"},
	{name: "no Unicode normalization", in: `{"\u00e9":1,"e\u0301":2}`, rfc: "{\"e\u0301\":2,\"\u00e9\":1}", why: "RFC 8785 3.2.3, 3.2.2.2"},
	{name: "names sort as strings", in: `{"10":1,"9":2,"":3}`, rfc: `{"":3,"10":1,"9":2}`, why: "RFC 8785 3.2.3"},
	{name: "trailing comma", in: `[1,]`, rfc: refused, why: "RFC 8259 5"},
	{name: "data after the value", in: `{} x`, rfc: refused, why: "RFC 8259 2"},
	{name: "byte order mark", in: "\ufeff{}", rfc: refused, why: "RFC 8259 8.1: senders must not add one, parsers may ignore or refuse it"},
	{name: "empty input", in: ``, rfc: refused, why: "RFC 8259 2"},
	{name: "whitespace around the value", in: "\t[1 , 2]\r\n", rfc: `[1,2]`, why: "RFC 8785 3.2.1"},
	{name: "top-level scalar", in: `1`, rfc: `1`, why: "RFC 8259 2: any value is a JSON text",
		cyberphone: refused},
	{name: "top-level string", in: `"\u00e9"`, rfc: `"é"`, why: "RFC 8259 2",
		cyberphone: refused},
}

// observe runs one implementation on one input; a panic counts as its own
// outcome so that a peer that crashes is seen, not hidden.
func observe(im Impl, in string) (got outcome) {
	defer func() {
		if r := recover(); r != nil {
			got = outcome(fmt.Sprint("panic: ", r))
		}
	}()
	out, err := im.Transform([]byte(in))
	if err != nil {
		return refused
	}
	return outcome(out)
}

func (d deviation) expected(impl string) outcome {
	var o outcome
	switch impl {
	case "idemledger":
		o = d.idemledger
	case "jsontext":
		o = d.jsontext
	case "cyberphone":
		o = d.cyberphone
	case "gowebpki":
		o = d.gowebpki
	default:
		panic("no column for " + impl)
	}
	if o == asRFC {
		return d.rfc
	}
	return o
}

// TestPeerDeviations records where each implementation parts from RFC 8785
// on bad and edge-case input. Ours must agree with the rfc column on every
// row: its column stays empty.
func TestPeerDeviations(t *testing.T) {
	impls := canonicalizers()
	for _, d := range deviations {
		if d.idemledger != asRFC {
			t.Errorf("%s: the idemledger column records %s, which parts from the rfc column", d.name, show(d.idemledger))
		}
		for _, im := range impls {
			got, want := observe(im, d.in), d.expected(im.Name)
			if got != want {
				t.Errorf("%s: %s on %q: got %s, recorded %s", d.name, im.Name, d.in, show(got), show(want))
			}
		}
	}
	if *printMatrix {
		fmt.Print(matrix(impls))
	}
}

// readable spells raw bytes for a Markdown cell: printable characters as
// they are, a byte that is not UTF-8 as <xx>, other characters as <U+XXXX>.
func readable(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "<%02x>", s[i])
		case r == '|':
			b.WriteString(`\|`)
		case !unicode.IsPrint(r) || r == '\ufffd':
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func show(o outcome) string {
	if o == refused {
		return "refused"
	}
	return fmt.Sprintf("%q", string(o))
}

// matrix renders the table for BENCHMARKS.md: a cell shows "ok" where the
// implementation does what the rfc column says, else what it does.
func matrix(impls []Impl) string {
	var b strings.Builder
	b.WriteString("| input | RFC 8785 / I-JSON |")
	for _, im := range impls {
		b.WriteString(" " + im.Name + " |")
	}
	b.WriteString(" rule |\n|---|---|")
	for range impls {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	cell := func(o outcome) string {
		if o == refused {
			return "refused"
		}
		if o == "" {
			return "(nothing)"
		}
		return "`" + readable(string(o)) + "`"
	}
	for _, d := range deviations {
		fmt.Fprintf(&b, "| %s: %s | %s |", d.name, cell(outcome(d.in)), cell(d.rfc))
		for _, im := range impls {
			o := d.expected(im.Name)
			if o == d.rfc {
				b.WriteString(" ok |")
			} else {
				b.WriteString(" **" + cell(o) + "** |")
			}
		}
		fmt.Fprintf(&b, " %s |\n", d.why)
	}
	return b.String()
}
