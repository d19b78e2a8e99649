package canonical

import (
	"math"
	"strconv"
	"unsafe"
)

// FormatFloat returns f as ECMAScript's Number.prototype.toString writes it
// (ECMA-262 section 6.1.6.1.20, Number::toString with radix 10), which is the
// number form of RFC 8785 section 3.2.2.3: the shortest digits that read back
// as f, in plain notation for magnitudes from 1e-6 up to but excluding 1e21
// and in exponent notation (1e+21, 1.5e-7) outside it; -0 prints as 0. It
// returns [ErrNonFinite] for NaN and ±Inf, which JSON cannot carry.
func FormatFloat(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", ErrNonFinite
	}
	var buf [32]byte
	return string(appendFloat(buf[:0], f)), nil
}

// appendFloat appends the ECMAScript form of the finite f to dst.
func appendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // both zeros
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Below 2^53 an integral binary64 is at most one unit from its
	// neighbours, so its exact digits are also its shortest round-trip
	// digits, and ECMAScript prints them in plain notation.
	if f < 1<<53 && f == math.Trunc(f) {
		return strconv.AppendUint(dst, uint64(f), 10)
	}

	// strconv's shortest form yields the digits ECMAScript asks for: the
	// fewest digits k that read back as f, and of those the nearest to f.
	// Layout: d[.ddd]e±x, from which we take the digits and the exponent.
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[k] = b[i]
			k++
		}
	}
	i++ // 'e'
	neg := b[i] == '-'
	e := 0
	for i++; i < len(b); i++ {
		e = e*10 + int(b[i]-'0')
	}
	if neg {
		e = -e
	}
	// ECMA-262 names n the position of the decimal point: f = 0.d1..dk × 10^n.
	n := e + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 < 0 {
			dst = append(dst, '-')
			dst = strconv.AppendInt(dst, int64(1-n), 10)
		} else {
			dst = append(dst, '+')
			dst = strconv.AppendInt(dst, int64(n-1), 10)
		}
	}
	return dst
}

// number reads the number at s.src[i] (a '-' or a digit), appends its
// canonical form and returns the offset after it.
func (s *state) number(i int) (int, error) {
	src := s.src
	start := i
	if src[i] == '-' {
		i++
		if i == len(src) {
			return 0, errAt(start, ErrInvalidNumber)
		}
		if src[i] == 'I' {
			if hasWord(src[i:], "Infinity") {
				return 0, errAt(start, ErrNonFinite)
			}
			return 0, errAt(start, ErrInvalidNumber)
		}
	}
	intStart := i
	if i == len(src) || !isDigit(src[i]) {
		return 0, errAt(start, ErrInvalidNumber)
	}
	if src[i] == '0' {
		i++
		if i < len(src) && isDigit(src[i]) {
			return 0, errAt(start, ErrLeadingZero)
		}
	} else {
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	intLen := i - intStart
	simple := true
	if i < len(src) && src[i] == '.' {
		simple = false
		i++
		if i == len(src) || !isDigit(src[i]) {
			return 0, errAt(start, ErrInvalidNumber)
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && src[i]|0x20 == 'e' {
		simple = false
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i == len(src) || !isDigit(src[i]) {
			return 0, errAt(start, ErrInvalidNumber)
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}

	// Fast path: an integer of at most 15 digits is below 2^53, so binary64
	// holds it exactly and ECMAScript prints it as written (no leading
	// zeros are possible here), except that -0 prints as 0.
	if simple && intLen <= 15 {
		if intLen == 1 && src[intStart] == '0' {
			s.out = append(s.out, '0')
		} else {
			s.out = append(s.out, src[start:i]...)
		}
		return i, nil
	}

	text := src[start:i]
	var f float64
	var err error
	if len(text) <= longNumber {
		// ParseFloat keeps no reference to its argument (its errors copy
		// it), so viewing the bytes as a string saves a copy per number.
		f, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(text), len(text)), 64)
	} else {
		f, err = parseLong(text)
	}
	if err != nil {
		// The grammar was checked above, so the only failure left is
		// overflow; underflow returns 0 without error, as in ECMAScript.
		return 0, errAt(start, ErrNumberOverflow)
	}
	mark := len(s.out)
	s.out = appendFloat(s.out, f)
	if s.exact && !sameDecimal(text, s.out[mark:]) {
		return 0, errAt(start, ErrInexactNumber)
	}
	return i, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// longNumber is the length of number text beyond which number reads it with
// parseLong rather than strconv.ParseFloat. ParseFloat misreads some numbers
// of more than 800 digits (golang/go#42436: its slow path keeps 800 digits,
// then puts the point after the 800th even when the text has more before
// it, and it stops reading an exponent past 10000 even when leading zeros
// would bring the number back into range): it reads 1 followed by 800 zeros
// and e-800 as 0.1, and 0.(100000 zeros)9e100000 as 0. Text of at most
// longNumber bytes has too few digits for either: fewer than 800, and too
// few to bring an exponent beyond 10000 back into binary64's range.
const longNumber = 700

// decisiveDigits is how many significant digits of a number decide its
// nearest binary64, given whether a nonzero digit follows them.
//
// Rounding to nearest can only change its result at a midpoint between two
// adjacent binary64 values, the threshold of overflow (2^1024 - 2^970, the
// midpoint above the largest binary64) among them. A midpoint is m×2^q with
// m odd, m < 2^54 and q ≥ -1075. For q < 0 it is m×5^-q × 10^q, whose
// significant digits are those of m×5^-q < 2^54 × 5^1075 ≈ 4.5×10^767: 768
// at most. For q ≥ 0 it is an integer below 2^1024, of 309 digits at most.
//
// Let x have more than 768 significant digits, x₀ be its first 768 and u the
// unit of the 768th: x₀ < |x| < x₀ + u. A midpoint strictly inside that
// interval would have its leading digit where x₀ has it and a nonzero digit
// beyond the 768th, and none has; so every number strictly inside rounds as
// |x| does, x₀ + u/10 (x₀ followed by a 1) among them.
const decisiveDigits = 768

// parseLong reads the well-formed JSON number text, of any length, to the
// nearest binary64 as strconv.ParseFloat would without its limits: it
// writes the number anew with at most decisiveDigits+1 significant digits
// and an exponent of at most four digits, which ParseFloat reads right, and
// returns ParseFloat's result.
func parseLong(text []byte) (float64, error) {
	var buf [decisiveDigits]byte
	d := parseDecimal(text, buf[:])
	// Sign, digits, the 1 that stands for the dropped ones, 'e', exponent.
	var lit [1 + decisiveDigits + 1 + 1 + 8]byte
	b := lit[:0]
	if d.neg {
		b = append(b, '-')
	}
	if len(d.digits) == 0 {
		b = append(b, '0')
	} else {
		b = append(b, d.digits...)
		n := len(d.digits)
		if d.more {
			for ; n < decisiveDigits; n++ {
				b = append(b, '0')
			}
			b = append(b, '1')
			n++
		}
		// At most 769 digits: beyond 10^400 the number overflows and
		// below 10^-400 it rounds to zero wherever its point is, so a
		// point clamped to ±400 gives the same result, and the
		// exponent written stays within what ParseFloat reads exactly.
		point := min(max(d.point, -400), 400)
		b = append(b, 'e')
		b = strconv.AppendInt(b, point-int64(n), 10)
	}
	return strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
}

// decimal is a JSON number reduced to sign, significant digits without
// leading or trailing zeros, and the point position: 0.digits × 10^point.
// more is true when the number has significant digits beyond those in
// digits, which then are its first ones (the number is then larger in
// magnitude than 0.digits × 10^point, and smaller than the next number of
// as many digits).
type decimal struct {
	neg    bool
	more   bool
	digits []byte
	point  int64
}

// maxDigits bounds the significant digits sameDecimal needs to look at: a
// printed number has at most 17, so a written one with more cannot match.
const maxDigits = 24

// parseDecimal reduces the well-formed JSON number b, keeping at most
// len(buf) significant digits, in buf.
func parseDecimal(b, buf []byte) (d decimal) {
	i := 0
	if b[0] == '-' {
		d.neg = true
		i++
	}
	n := 0              // significant digits kept in buf
	zeros := 0          // zeros seen after the last nonzero significant digit
	var intDigits int64 // digits before the point, leading zeros excluded
	seen := false       // a nonzero digit has been seen
	var lead int64      // leading zeros after the point, before any nonzero digit
	frac := false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			frac = true
			continue
		}
		if !isDigit(c) {
			break
		}
		if c == '0' && !seen {
			if frac {
				lead++
			}
			continue
		}
		if !frac {
			intDigits++
		}
		if c == '0' {
			zeros++
			continue
		}
		seen = true
		if d.more || n+zeros+1 > len(buf) {
			// The zeros before c, if some fit, would be trailing zeros
			// of the kept digits: dropping them keeps the value.
			d.more = true
			continue
		}
		for ; zeros > 0; zeros-- {
			buf[n] = '0'
			n++
		}
		buf[n] = c
		n++
	}
	var exp int64
	if i < len(b) { // 'e' or 'E'
		i++
		eneg := false
		if b[i] == '+' || b[i] == '-' {
			eneg = b[i] == '-'
			i++
		}
		for ; i < len(b); i++ {
			if exp < 1e12 { // saturate: beyond this no binary64 is finite
				exp = exp*10 + int64(b[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	d.digits = buf[:n]
	if n > 0 {
		d.point = intDigits - lead + exp
	}
	return d
}

// sameDecimal reports whether the written number and its printed canonical
// form denote the same decimal number.
func sameDecimal(written, printed []byte) bool {
	var wb, pb [maxDigits]byte
	w := parseDecimal(written, wb[:])
	if w.more {
		return false
	}
	p := parseDecimal(printed, pb[:])
	if len(w.digits) == 0 || len(p.digits) == 0 {
		return len(w.digits) == len(p.digits) // zero is zero whatever its sign
	}
	return w.neg == p.neg && w.point == p.point && string(w.digits) == string(p.digits)
}
