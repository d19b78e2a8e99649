package canonical

import (
	"errors"
	"strconv"
)

// Sentinel errors. Transform, Append and Marshal return them wrapped in a
// *[SyntaxError] that gives the byte offset in the input; test for them with
// [errors.Is].
var (
	// ErrEmpty is returned when the input holds no JSON value: it is empty
	// or only whitespace.
	ErrEmpty = errors.New("canonical: no JSON value")

	// ErrUnexpectedEnd is returned when the input ends inside a value: an
	// unclosed string, array or object, or a cut-off literal.
	ErrUnexpectedEnd = errors.New("canonical: unexpected end of input")

	// ErrSyntax is returned for a byte that cannot start or continue a value
	// at its position (RFC 8259 section 2), when no more specific error
	// applies.
	ErrSyntax = errors.New("canonical: invalid character")

	// ErrTrailingComma is returned for a comma directly before ']' or '}'.
	ErrTrailingComma = errors.New("canonical: trailing comma")

	// ErrTrailingData is returned when anything but whitespace follows the
	// top-level value.
	ErrTrailingData = errors.New("canonical: data after the top-level value")

	// ErrControlChar is returned for an unescaped control character
	// (U+0000 to U+001F) inside a string (RFC 8259 section 7).
	ErrControlChar = errors.New("canonical: unescaped control character in string")

	// ErrInvalidEscape is returned for a backslash escape RFC 8259 section 7
	// does not define, or a \u not followed by four hexadecimal digits.
	ErrInvalidEscape = errors.New("canonical: invalid escape in string")

	// ErrLoneSurrogate is returned for a \u escape of a UTF-16 surrogate
	// that is not part of a high-then-low pair (RFC 7493 section 2.1).
	ErrLoneSurrogate = errors.New("canonical: lone surrogate escape")

	// ErrNoncharacter is returned, only when [Options.RefuseNoncharacters]
	// is set, for a Unicode noncharacter in a string or a member name,
	// written raw or as a \u escape (a surrogate pair such as \udbff\udfff
	// counts as the one character it encodes). RFC 7493 section 2.1 rules
	// noncharacters out of I-JSON strings. They are the 66 code points the
	// Unicode Standard (section 23.7, Noncharacters) reserves for internal
	// use and never assigns: U+FDD0 to U+FDEF, and the last two code points
	// of each of the 17 planes (U+FFFE and U+FFFF, U+1FFFE and U+1FFFF, and
	// so on up to U+10FFFE and U+10FFFF). The offset is that of the
	// character's first byte, or of the backslash that starts its escape.
	ErrNoncharacter = errors.New("canonical: Unicode noncharacter in string")

	// ErrInvalidUTF8 is returned for bytes that are not UTF-8 (RFC 3629):
	// overlong forms, encoded surrogates, truncated sequences, stray
	// continuation bytes (RFC 7493 section 2.1).
	ErrInvalidUTF8 = errors.New("canonical: invalid UTF-8")

	// ErrLeadingZero is returned for a number with a superfluous leading
	// zero, such as 01 or -00.5 (RFC 8259 section 6).
	ErrLeadingZero = errors.New("canonical: leading zero in number")

	// ErrInvalidNumber is returned for a malformed number that starts with
	// '-' or a digit, such as -, -x, 1., or 1e+ (RFC 8259 section 6). Text
	// that cannot start a number at all (.5, +1) is ErrSyntax.
	ErrInvalidNumber = errors.New("canonical: invalid number")

	// ErrNonFinite is returned for the tokens NaN, Infinity and -Infinity,
	// which JSON lacks, and by [FormatFloat] for NaN and ±Inf, which RFC 8785
	// section 3.2.2.3 refuses.
	ErrNonFinite = errors.New("canonical: NaN or infinity")

	// ErrNumberOverflow is returned for a number whose magnitude rounds
	// beyond the largest binary64 (RFC 7493 section 2.2), such as 1e400.
	ErrNumberOverflow = errors.New("canonical: number overflows binary64")

	// ErrInexactNumber is returned, only when [Options.ExactNumbers] is set,
	// for a number whose canonical form denotes another decimal number than
	// the one written (9007199254740993, 0.10000000000000000555, 1e-400).
	ErrInexactNumber = errors.New("canonical: number changes value in canonical form")

	// ErrDuplicateName is returned for an object with two members whose
	// names are equal after unescaping (RFC 7493 section 2.3). The offset is
	// that of the second occurrence.
	ErrDuplicateName = errors.New("canonical: duplicate member name")

	// ErrTooDeep is returned when arrays and objects nest deeper than
	// [Options.MaxDepth] ([DefaultMaxDepth] by default).
	ErrTooDeep = errors.New("canonical: nesting too deep")
)

// SyntaxError reports why and where the input was refused. Every error that
// Transform, Append and Marshal return for bad input is a *SyntaxError;
// errors.Is(err, [ErrDuplicateName]) and the like see through it.
type SyntaxError struct {
	// Offset is the position in the input, in bytes from its start, of the
	// token at fault (for Marshal: in the output of json.Marshal).
	Offset int64
	// Err is one of the sentinel errors of this package.
	Err error
}

// Error returns the sentinel's message and the offset.
func (e *SyntaxError) Error() string {
	if e.Err == nil {
		return "canonical: invalid input at offset " + strconv.FormatInt(e.Offset, 10)
	}
	return e.Err.Error() + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// Unwrap returns the sentinel error.
func (e *SyntaxError) Unwrap() error { return e.Err }

func errAt(off int, err error) error {
	return &SyntaxError{Offset: int64(off), Err: err}
}
