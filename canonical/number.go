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
// returns ErrNonFinite for NaN and ±Inf, which JSON cannot carry.
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
	// ParseFloat keeps no reference to its argument (its errors copy it),
	// so viewing the bytes as a string saves a copy per number.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(text), len(text)), 64)
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
