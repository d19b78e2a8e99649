package canonical

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Numbers written with hundreds or thousands of digits. strconv.ParseFloat
// (Go 1.26) misreads some of them (golang/go#42436): its slow path keeps 800
// digits and then places the decimal point after the 800th, and it stops
// reading an exponent beyond 10000, so "1" + 800 zeros + "e-800" read as 0.1
// and "0." + 100000 zeros + "9e100000" as 0.

func rep(s string, n int) string { return strings.Repeat(s, n) }

func cat(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case int:
			b.WriteString(strconv.Itoa(p))
		default:
			panic("cat: unexpected part")
		}
	}
	return b.String()
}

// halfway is the exact value m×2^q, for odd m: the midpoint between two
// adjacent binary64 values when m < 2^54 and m×2^q lies in their range. It
// is computed with math/big, so its digits owe nothing to strconv. It is
// held as the integer n times 10^exp.
type halfway struct {
	n   *big.Int
	exp int
}

func half(m *big.Int, q int) halfway {
	if q >= 0 {
		return halfway{new(big.Int).Lsh(m, uint(q)), 0}
	}
	// m×2^q = m×5^-q × 10^q.
	five := new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-q)), nil)
	return halfway{new(big.Int).Mul(m, five), q}
}

// halfOf is half for an m that fits an int64.
func halfOf(m int64, q int) halfway { return half(big.NewInt(m), q) }

// halfTop is half for m = 2^54 - k.
func halfTop(k int64, q int) halfway {
	m := new(big.Int).Lsh(big.NewInt(1), 54)
	return half(m.Sub(m, big.NewInt(k)), q)
}

// exact writes the midpoint itself followed by z zeros.
func (h halfway) exact(z int) string { return cat(h.n.String(), rep("0", z), "e", h.exp-z) }

// above writes the midpoint plus one unit in the (z+1)th digit after its
// last: a 1 after z zeros.
func (h halfway) above(z int) string {
	return cat(h.n.String(), rep("0", z), "1e", h.exp-z-1)
}

// below writes the midpoint minus one unit in the zth digit after its last:
// n-1 followed by z nines.
func (h halfway) below(z int) string {
	return cat(new(big.Int).Sub(h.n, big.NewInt(1)).String(), rep("9", z), "e", h.exp-z)
}

func neg(s string) string { return "-" + s }

var (
	// 2^-1075, half the smallest subnormal: 752 significant digits.
	halfMinSub = halfOf(1, -1075)
	// 5×2^-1075, between the subnormals 2×2^-1074 (even) and 3×2^-1074.
	halfSub2to3 = halfOf(5, -1075)
	// (2^53-1)×2^-1075, between the largest subnormal (odd significand)
	// and the smallest normal, 2^-1022.
	halfSubNormal = halfOf(1<<53-1, -1075)
	// (2^54-1)×2^-1075, between (2^53-1)×2^-1074 (odd) and 2^-1021: the
	// midpoint with the most significant digits, 768.
	halfWidest = halfTop(1, -1075)
	// (2^54-3)×2^-1075, between (2^53-2)×2^-1074 (even) and the next.
	halfWidestEven = halfTop(3, -1075)
	// 1 + 2^-53, between 1 and 1+2^-52: 54 significant digits.
	halfOne = halfOf(1<<53+1, -53)
	// 2^1024 - 2^970 = (2^54-1)×2^970, between the largest binary64 and
	// 2^1024: at it and beyond, a number overflows.
	halfMax = halfTop(1, 970)
)

// longNumberTests are long numbers and their canonical form. The want
// strings were produced by V8 (testdata/jsonnum.js, which
// TestLongNumbersNode runs again when node is installed); "null" is V8's
// Infinity, which Transform refuses with ErrNumberOverflow.
var longNumberTests = []struct{ name, in, want string }{
	// The three numbers of the report, and the last length that worked.
	{"1, 800 zeros, e-800", cat("1", rep("0", 800), "e-800"), "1"},
	{"1, 799 zeros, e-799", cat("1", rep("0", 799), "e-799"), "1"},
	{"2, 1000 zeros, e-1000", cat("2", rep("0", 1000), "e-1000"), "2"},
	{"0., 100000 zeros, 9e100000", cat("0.", rep("0", 100000), "9e100000"), "0.9"},

	// Many zeros after the point.
	{"0., 900 zeros, 123e900", cat("0.", rep("0", 900), "123e900"), "0.123"},
	{"0., 1000 zeros, 1", cat("0.", rep("0", 1000), "1"), "0"},
	{"0., 322 zeros, 5, 1000 zeros", cat("0.", rep("0", 322), "5", rep("0", 1000)), "5e-323"},
	{"0., 100000 zeros, 1e100001", cat("0.", rep("0", 100000), "1e100001"), "1"},
	{"0., 100000 zeros, 17e99999", cat("0.", rep("0", 100000), "17e99999"), "0.017"},
	{"0., 1000 zeros, 7e1300", cat("0.", rep("0", 1000), "7e1300"), "7e+299"},

	// Many trailing zeros, with and without an exponent.
	{"1.5, 5000 zeros", cat("1.5", rep("0", 5000)), "1.5"},
	{"1.5, 5000 zeros, E+2", cat("1.5", rep("0", 5000), "E+2"), "150"},
	{"12345, 2000 zeros, e-2000", cat("12345", rep("0", 2000), "e-2000"), "12345"},
	{"1, 900 zeros, .0e-900", cat("1", rep("0", 900), ".0e-900"), "1"},
	{"1, 5000 zeros, e-5000", cat("1", rep("0", 5000), "e-5000"), "1"},
	{"1, 20000 zeros, e-20000", cat("1", rep("0", 20000), "e-20000"), "1"},
	{"7, 1000 zeros, e-1300", cat("7", rep("0", 1000), "e-1300"), "7e-300"},
	{"1, 1000 zeros, e-692", cat("1", rep("0", 1000), "e-692"), "1e+308"},
	{"1, 1000 zeros, e-691", cat("1", rep("0", 1000), "e-691"), "null"},
	{"exponent with 1000 leading zeros", cat("1", rep("0", 1000), "e-", rep("0", 1000), "1000"), "1"},

	// Negative numbers.
	{"-1, 800 zeros, e-800", cat("-1", rep("0", 800), "e-800"), "-1"},
	{"-0.5, 3000 zeros, e1", cat("-0.5", rep("0", 3000), "e1"), "-5"},
	{"-0., 1000 zeros, 25e1001", cat("-0.", rep("0", 1000), "25e1001"), "-2.5"},

	// Exponents far beyond binary64 still overflow or underflow.
	{"1, 1000 zeros, e999999999999", cat("1", rep("0", 1000), "e999999999999"), "null"},
	{"1, 1000 zeros, e-999999999999", cat("1", rep("0", 1000), "e-999999999999"), "0"},
	{"-0., 1000 zeros, 1e-999999999999", cat("-0.", rep("0", 1000), "1e-999999999999"), "0"},
	{"0., 1000 zeros, 1e99999999999999999999", cat("0.", rep("0", 1000), "1e99999999999999999999"), "null"},
	{"zero, 1000 zeros, e999999999999", cat("0.", rep("0", 1000), "e999999999999"), "0"},
	{"-zero, 2000 zeros", cat("-0.", rep("0", 2000)), "0"},
	{"1e, 1000 nines", cat("1e", rep("9", 1000)), "null"},
	{"1e-, 1000 nines", cat("1e-", rep("9", 1000)), "0"},

	// Near the subnormal boundary.
	{"smallest subnormal, 1000 zeros", cat("4.9406564584124654", rep("0", 1000), "e-324"), "5e-324"},
	{"2^-1075 exactly, ties to 0", halfMinSub.exact(100), "0"},
	{"2^-1075 and a 1 past 1000 zeros", halfMinSub.above(1000), "5e-324"},
	{"2^-1075 less a unit past 1000 nines", halfMinSub.below(1000), "0"},
	{"5×2^-1075 exactly, ties to even", halfSub2to3.exact(100), "1e-323"},
	{"5×2^-1075 and a 1 past 1000 zeros", halfSub2to3.above(1000), "1.5e-323"},
	{"smallest normal, 1000 zeros", cat("2.2250738585072014", rep("0", 1000), "e-308"), "2.2250738585072014e-308"},
	{"subnormal/normal midpoint exactly", halfSubNormal.exact(100), "2.2250738585072014e-308"},
	{"subnormal/normal midpoint less a unit", halfSubNormal.below(1000), "2.225073858507201e-308"},
	{"768-digit midpoint exactly, ties up to even", halfWidest.exact(100), "4.450147717014403e-308"},
	{"768-digit midpoint less a unit", halfWidest.below(1000), "4.4501477170144023e-308"},
	{"768-digit midpoint with an even floor exactly", halfWidestEven.exact(100), "4.450147717014402e-308"},
	{"768-digit midpoint with an even floor and a 1 past 1000 zeros", halfWidestEven.above(1000), "4.4501477170144023e-308"},
	{"768-digit midpoint with an even floor and a 1 right after", halfWidestEven.above(0), "4.4501477170144023e-308"},
	{"negative 768-digit midpoint and a 1 past 1000 zeros", neg(halfWidestEven.above(1000)), "-4.4501477170144023e-308"},

	// Near the overflow boundary.
	{"largest binary64, 1000 zeros", cat("1.7976931348623157", rep("0", 1000), "e308"), "1.7976931348623157e+308"},
	{"2^1024-2^970 exactly overflows", halfMax.exact(1000), "null"},
	{"2^1024-2^970 less a unit past 1000 nines", halfMax.below(1000), "1.7976931348623157e+308"},
	{"-(2^1024-2^970) less a unit past 1000 nines", neg(halfMax.below(1000)), "-1.7976931348623157e+308"},
	{"2^1024-2^970 written with a fraction of 1000 zeros", cat(halfMax.n.String(), ".", rep("0", 1000)), "null"},

	// More than 800 significant digits: the rounding turns on a digit past
	// the 800th.
	{"1., 1000 zeros, 1", cat("1.", rep("0", 1000), "1"), "1"},
	{"2, 1000 zeros, 3e-1001", cat("2", rep("0", 1000), "3e-1001"), "2"},
	{"-9.5, 800 zeros, 1", cat("-9.5", rep("0", 800), "1"), "-9.5"},
	{"1+2^-53 exactly, ties to 1", halfOne.exact(1000), "1"},
	{"1+2^-53 and a 1 past 1000 zeros", halfOne.above(1000), "1.0000000000000002"},
	{"1+2^-53 less a unit past 1000 nines", halfOne.below(1000), "1"},
	{"-(1+2^-53) and a 1 past 1000 zeros", neg(halfOne.above(1000)), "-1.0000000000000002"},
	{"0.1234567890 × 100", cat("0.", rep("1234567890", 100)), "0.12345678901234568"},
	{"3.333…, 1000 threes", cat("3.", rep("3", 1000)), "3.3333333333333335"},
	{"1000 nines, e-1000", cat(rep("9", 1000), "e-1000"), "1"},
	{"0.111…e300, 900 ones", cat("0.", rep("1", 900), "e300"), "1.1111111111111112e+299"},
	{"0.111…e900, 900 ones", cat("0.", rep("1", 900), "e900"), "null"},
	{"1000 nines", rep("9", 1000), "null"},
}

func TestLongNumbers(t *testing.T) {
	for _, tt := range longNumberTests {
		t.Run(tt.name, func(t *testing.T) {
			// The exact reference of the other tests and of the fuzz
			// targets agrees with V8.
			f, ok := ratFloat(tt.in)
			if ref, _ := FormatFloat(f); ok != (tt.want != "null") || ok && ref != tt.want {
				t.Errorf("ratFloat = %v, %v; V8 says %s", f, ok, tt.want)
			}
			got, err := Transform([]byte(tt.in))
			if tt.want == "null" {
				if !errors.Is(err, ErrNumberOverflow) {
					t.Errorf("Transform = %q, %v; want ErrNumberOverflow", got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("Transform = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestLongNumbersNode checks the expected strings of longNumberTests against
// V8, when node is installed.
func TestLongNumbersNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found in PATH (%v): V8 comparison not run", err)
	}
	var in strings.Builder
	for _, tt := range longNumberTests {
		in.WriteString(tt.in)
		in.WriteByte('\n')
	}
	cmd := exec.Command(node, "testdata/jsonnum.js")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node testdata/jsonnum.js: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(longNumberTests) {
		t.Fatalf("node printed %d lines, want %d", len(lines), len(longNumberTests))
	}
	for i, tt := range longNumberTests {
		if lines[i] != tt.want {
			t.Errorf("%s: V8 says %s, the table %s", tt.name, lines[i], tt.want)
		}
	}
}

// TestHalfwayDigits pins the digit counts the reduction of long numbers
// relies on: the widest midpoint between two binary64 values has 768
// significant digits.
func TestHalfwayDigits(t *testing.T) {
	for _, c := range []struct {
		name string
		h    halfway
		want int
	}{
		{"2^-1075", halfMinSub, 752},
		{"(2^54-1)×2^-1075", halfWidest, 768},
		{"(2^54-3)×2^-1075", halfWidestEven, 768},
		{"2^1024-2^970", halfMax, 309},
	} {
		if n := len(c.h.n.String()); n != c.want {
			t.Errorf("%s: %d significant digits, want %d", c.name, n, c.want)
		}
	}
}

// TestLongNumbersExact checks Options.ExactNumbers on long numbers: a long
// spelling of a number that prints as the same decimal passes, and a long
// number that printing would change is refused.
func TestLongNumbersExact(t *testing.T) {
	exact := Options{ExactNumbers: true}
	pass := []struct{ in, want string }{
		{cat("1", rep("0", 800), "e-800"), "1"},
		{cat("-1", rep("0", 800), "e-800"), "-1"},
		{cat("0.", rep("0", 100000), "9e100000"), "0.9"},
		{cat("1.5", rep("0", 5000)), "1.5"},
		{cat("12345", rep("0", 2000), "e-2000"), "12345"},
		{cat("[", "2", rep("0", 1000), "e-1000", "]"), "[2]"},
		{cat("0.", rep("0", 1000), "e999999999999"), "0"},
		{cat("1.7976931348623157", rep("0", 1000), "e308"), "1.7976931348623157e+308"},
	}
	for _, p := range pass {
		got, err := exact.Transform([]byte(p.in))
		if err != nil || string(got) != p.want {
			t.Errorf("ExactNumbers %.40s… = %q, %v; want %q", p.in, got, err, p.want)
		}
	}
	refuse := []struct {
		in     string
		offset int64
	}{
		{cat("1", rep("0", 800), "1e-801"), 0}, // 0.1 + 10^-801
		{halfOne.exact(1000), 0},               // prints 1
		{halfMinSub.above(1000), 0},            // prints 5e-324
		{cat("1", rep("0", 1000), "e-999999999999"), 0},
		{cat(`{"a":`, "3.", rep("3", 1000), "}"), 5},
	}
	for _, r := range refuse {
		_, err := exact.Transform([]byte(r.in))
		var se *SyntaxError
		if !errors.Is(err, ErrInexactNumber) || !errors.As(err, &se) || se.Offset != r.offset {
			t.Errorf("ExactNumbers %.40s…: %v, want ErrInexactNumber at %d", r.in, err, r.offset)
		}
	}
}

// reduce writes the JSON number s as ±0.digits × 10^point, digits without
// leading or trailing zeros (empty for zero).
func reduce(s string) (negative bool, digits string, point *big.Int) {
	negative = strings.HasPrefix(s, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(s, "-")), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits = strings.TrimLeft(intPart+frac, "0")
	point = big.NewInt(int64(len(digits) - len(frac)))
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		return negative, "", new(big.Int)
	}
	if exp != "" {
		e, ok := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
		if !ok {
			panic("reduce: bad exponent in " + s)
		}
		point.Add(point, e)
	}
	return negative, digits, point
}

// ratFloat reads the JSON number s with exact rational arithmetic and
// rounds it to the nearest binary64, ties to even (big.Rat.Float64); ok is
// false when it rounds beyond the largest binary64. It shares nothing with
// strconv: it is the reference for long numbers in the tests and fuzz
// targets.
func ratFloat(s string) (f float64, ok bool) {
	negative, digits, point := reduce(s)
	sign := 1.0
	if negative {
		sign = -1
	}
	switch {
	case digits == "":
		return math.Copysign(0, sign), true
	case point.Cmp(big.NewInt(400)) > 0: // at least 10^400
		return 0, false
	case point.Cmp(big.NewInt(-400)) < 0: // below 10^-400
		return math.Copysign(0, sign), true
	}
	r, _ := new(big.Rat).SetString(digits)
	scale := point.Int64() - int64(len(digits))
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs(scale)), nil)
	if scale < 0 {
		r.Quo(r, new(big.Rat).SetInt(pow))
	} else {
		r.Mul(r, new(big.Rat).SetInt(pow))
	}
	f, _ = r.Float64()
	return sign * f, !math.IsInf(f, 0)
}

// sameNumber reports whether the JSON numbers a and b denote the same
// decimal number (any zero is zero).
func sameNumber(a, b string) bool {
	na, da, pa := reduce(a)
	nb, db, pb := reduce(b)
	if da == "" || db == "" {
		return da == db
	}
	return na == nb && da == db && pa.Cmp(pb) == 0
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// respell writes digits × 10^exp as a JSON number in a random one of its
// many spellings: the point anywhere in the digits or before them after
// zeros, the exponent with 'e' or 'E', a '+' or not, or none when it is 0.
func respell(r *rand.Rand, negative bool, digits string, exp int) string {
	var b strings.Builder
	if negative {
		b.WriteByte('-')
	}
	switch k := r.IntN(len(digits) + 2); {
	case k == 0: // digits as they are
		b.WriteString(digits)
	case k <= len(digits): // a point after k digits
		b.WriteString(digits[:k])
		if k < len(digits) {
			b.WriteString("." + digits[k:])
		}
		exp += len(digits) - k
	default: // 0.000digits
		z := r.IntN(1200)
		b.WriteString("0." + rep("0", z) + digits)
		exp += len(digits) + z
	}
	if exp == 0 && r.IntN(2) == 0 {
		return b.String()
	}
	b.WriteString([]string{"e", "E"}[r.IntN(2)])
	if exp >= 0 && r.IntN(2) == 0 {
		b.WriteByte('+')
	}
	b.WriteString(strconv.Itoa(exp))
	return b.String()
}

// TestLongNumbersHalfway writes, for random binary64 values x, the exact
// midpoint between x and the next value up, then the midpoint and a 1 many
// digits further, then the midpoint less a unit many digits further, each
// padded with up to 1200 zeros or nines and spelled at random. They must
// round to the even one of the two, to the one above and to x: the
// expected values come from math.Nextafter and the bits of x, not from a
// decimal parser.
func TestLongNumbersHalfway(t *testing.T) {
	seed := uint64(20261130)
	r := rand.New(rand.NewPCG(seed, seed))
	n := 3000
	if testing.Short() {
		n = 300
	}
	check := func(in string, want float64, what string) {
		t.Helper()
		got, err := Transform([]byte(in))
		if math.IsInf(want, 0) {
			if !errors.Is(err, ErrNumberOverflow) {
				t.Fatalf("%s (%d bytes, %.60s…): Transform = %q, %v; want ErrNumberOverflow", what, len(in), in, got, err)
			}
			return
		}
		f, perr := strconv.ParseFloat(string(got), 64) // short: ParseFloat reads it right
		if err != nil || perr != nil || f != want {
			t.Fatalf("%s (%d bytes, %.60s…): Transform = %q, %v; want %v", what, len(in), in, got, err, want)
		}
		if ref, ok := ratFloat(in); !ok || ref != want {
			t.Fatalf("%s: ratFloat = %v, %v; want %v", what, ref, ok, want)
		}
	}
	for i := 0; i < n; i++ {
		var bits uint64
		switch i % 4 {
		case 0: // any finite value
			bits = r.Uint64() &^ (1 << 63)
			if bits>>52 == 0x7ff {
				bits = math.Float64bits(math.MaxFloat64)
			}
		case 1: // subnormals and the lowest normals
			bits = r.Uint64N(1 << 54)
		case 2: // the largest values
			bits = math.Float64bits(math.MaxFloat64) - r.Uint64N(1<<20)
		case 3: // around 1
			bits = math.Float64bits(1) + r.Uint64N(1<<53) - 1<<52
		}
		x := math.Float64frombits(bits)
		up := math.Nextafter(x, math.Inf(1))
		m, e := bits&(1<<52-1), int(bits>>52)
		if e == 0 {
			e = 1
		} else {
			m |= 1 << 52
		}
		// x = m×2^(e-1075); the midpoint is (2m+1)×2^(e-1076).
		h := half(new(big.Int).SetUint64(2*m+1), e-1076)
		tie := x
		if m%2 == 1 {
			tie = up
		}
		digits := h.n.String()
		z := r.IntN(1200)
		negative, sign := r.IntN(4) == 0, 1.0
		if negative {
			sign = -1
		}
		check(respell(r, negative, digits+rep("0", z), h.exp-z), sign*tie, fmt.Sprintf("midpoint above %v", x))
		check(respell(r, negative, digits+rep("0", z)+"1", h.exp-z-1), sign*up, fmt.Sprintf("midpoint above %v plus", x))
		below := new(big.Int).Sub(h.n, big.NewInt(1)).String() + rep("9", z+1)
		check(respell(r, negative, below, h.exp-z-1), sign*x, fmt.Sprintf("midpoint above %v minus", x))
	}
}
