package canonical

import "unicode/utf8"

// plain marks the bytes a string can copy unchanged without a closer look:
// printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Flags str returns about a string.
const (
	hasEscape   = 1 << iota // the input used a backslash escape
	hasNonASCII             // the input has a raw byte >= 0x80
)

// str reads the string at s.src[i] (a '"'), appends its canonical form
// (RFC 8785 section 3.2.2.2) and returns the offset after it and its flags.
func (s *state) str(i int) (int, uint8, error) {
	src := s.src
	s.out = append(s.out, '"')
	i++
	chunk := i
	var flags uint8
	for {
		for i < len(src) && plain[src[i]] {
			i++
		}
		if i == len(src) {
			return 0, 0, errAt(i, ErrUnexpectedEnd)
		}
		switch c := src[i]; {
		case c == '"':
			s.out = append(s.out, src[chunk:i]...)
			s.out = append(s.out, '"')
			return i + 1, flags, nil
		case c == '\\':
			s.out = append(s.out, src[chunk:i]...)
			flags |= hasEscape
			var err error
			if i, err = s.escape(i); err != nil {
				return 0, 0, err
			}
			chunk = i
		case c < 0x20:
			return 0, 0, errAt(i, ErrControlChar)
		default:
			// DecodeRune refuses overlong forms, surrogates and truncated
			// sequences with (RuneError, 1); a real U+FFFD has size 3.
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, errAt(i, ErrInvalidUTF8)
			}
			// Every noncharacter has lead byte 0xEF (U+FDD0..U+FDEF,
			// U+FFFE, U+FFFF) or 0xF0..0xF4 (the other planes), so most
			// characters skip the test after one comparison.
			if c >= 0xEF && s.nonchar && isNoncharacter(r) {
				return 0, 0, errAt(i, ErrNoncharacter)
			}
			flags |= hasNonASCII
			i += size
		}
	}
}

// escape decodes the escape at s.src[i] (a '\\'), appends the character in
// canonical form and returns the offset after the escape.
func (s *state) escape(i int) (int, error) {
	src := s.src
	if i+1 == len(src) {
		return 0, errAt(len(src), ErrUnexpectedEnd)
	}
	switch src[i+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		s.out = append(s.out, '\\', src[i+1])
		return i + 2, nil
	case '/':
		s.out = append(s.out, '/')
		return i + 2, nil
	case 'u':
	default:
		return 0, errAt(i, ErrInvalidEscape)
	}
	r, err := hex4(src, i)
	if err != nil {
		return 0, err
	}
	n := i + 6
	switch {
	case 0xDC00 <= r && r <= 0xDFFF:
		return 0, errAt(i, ErrLoneSurrogate)
	case 0xD800 <= r && r <= 0xDBFF:
		if n+1 >= len(src) || src[n] != '\\' || src[n+1] != 'u' {
			return 0, errAt(i, ErrLoneSurrogate)
		}
		lo, err := hex4(src, n)
		if err != nil {
			return 0, err
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, errAt(i, ErrLoneSurrogate)
		}
		r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
		n += 6
	}
	if s.nonchar && isNoncharacter(r) {
		return 0, errAt(i, ErrNoncharacter)
	}
	s.out = appendChar(s.out, r)
	return n, nil
}

// isNoncharacter reports whether the code point r (at most U+10FFFF) is
// one of the 66 Unicode noncharacters (Unicode Standard section 23.7):
// U+FDD0..U+FDEF, or a code point whose low 16 bits are FFFE or FFFF.
func isNoncharacter(r rune) bool {
	return r&0xFFFE == 0xFFFE || 0xFDD0 <= r && r <= 0xFDEF
}

// hex4 decodes the four hex digits of the \u escape at src[i].
func hex4(src []byte, i int) (rune, error) {
	if i+6 > len(src) {
		for j := i + 2; j < len(src); j++ {
			if unhex(src[j]) < 0 {
				return 0, errAt(i, ErrInvalidEscape)
			}
		}
		return 0, errAt(len(src), ErrUnexpectedEnd)
	}
	var r rune
	for _, c := range src[i+2 : i+6] {
		v := unhex(c)
		if v < 0 {
			return 0, errAt(i, ErrInvalidEscape)
		}
		r = r<<4 | v
	}
	return r, nil
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// appendChar appends r as RFC 8785 writes it in a string: the two-character
// escapes for '"', '\\' and the five named controls, \u00xx with lowercase
// hex for the other controls, and the UTF-8 bytes of everything else.
func appendChar(dst []byte, r rune) []byte {
	switch r {
	case '"', '\\':
		return append(dst, '\\', byte(r))
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if r < 0x20 {
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// unescape appends the value of a canonical string body (between the
// quotes, as appendChar writes it) to dst.
func unescape(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			dst = append(dst, b[i])
			continue
		}
		i++
		switch b[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u': // \u00xx
			dst = append(dst, byte(unhex(b[i+3])<<4|unhex(b[i+4])))
			i += 4
		default: // '"' or '\\'
			dst = append(dst, b[i])
		}
	}
	return dst
}
