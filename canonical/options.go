package canonical

import "slices"

// DefaultMaxDepth is the nesting limit used when [Options.MaxDepth] is zero or
// negative: 10,000 levels of arrays and objects, so 10,000 nested '[' are
// accepted and 10,001 refused, as encoding/json and jsontext do. It is far
// beyond any sane payload and bounds the bookkeeping an attacker can make a
// call spend (under 100 bytes a level). The scanner keeps its own stack on
// the heap, so even a huge limit cannot overflow the goroutine stack.
const DefaultMaxDepth = 10000

// Options adjusts Transform, Append and Marshal. The zero value is what the
// package-level functions use. An Options value may be used from several
// goroutines at once.
type Options struct {
	// MaxDepth is the deepest nesting of arrays and objects accepted: 1 allows
	// [1] but not [[1]]; a scalar has depth 0. Zero or negative means
	// DefaultMaxDepth. Deeper input is refused with ErrTooDeep.
	MaxDepth int

	// ExactNumbers refuses, with [ErrInexactNumber], any number whose canonical
	// form denotes another decimal number than the one written: the test is
	// equality of decimal values, so 0.1, 1.50, 1e2 and -0 pass while
	// 9007199254740993 (prints 9007199254740992), 0.10000000000000000555
	// (prints 0.1) and 1e-400 (prints 0) fail. Set it when two different
	// amounts must never share a canonical form.
	ExactNumbers bool

	// RefuseNoncharacters refuses, with [ErrNoncharacter], the 66 Unicode
	// noncharacters (U+FDD0 to U+FDEF and the last two code points of every
	// plane, U+FFFE to U+10FFFF) in strings and member names, raw or
	// escaped: strict I-JSON, whose RFC 7493 section 2.1 rules them out.
	// By default they are accepted and written as raw UTF-8, as V8's
	// JSON.stringify and the other RFC 8785 implementations write them:
	// they are Unicode scalar values, and RFC 8785 section 3.1 names the
	// I-JSON properties it relies on (unique names, no lone surrogates,
	// binary64 numbers) without them.
	RefuseNoncharacters bool
}

// Transform returns the canonical form (RFC 8785) of the JSON text src, with
// the limits of o. Errors are *[SyntaxError] values wrapping the sentinels of
// this package.
func (o Options) Transform(src []byte) ([]byte, error) {
	return o.Append(nil, src)
}

// Append appends the canonical form of src to dst and returns the extended
// slice, with the limits of o. On error it returns dst unchanged and a
// *SyntaxError. dst and src must not overlap.
func (o Options) Append(dst, src []byte) ([]byte, error) {
	s := getState(o)
	defer putState(s)
	if err := s.run(src); err != nil {
		return dst, err
	}
	n := len(s.out)
	dst = slices.Grow(dst, n)
	s.emit(dst[len(dst) : len(dst)+n])
	return dst[:len(dst)+n], nil
}

// Transform returns the canonical form (RFC 8785) of the JSON text src with
// the default Options. Input that RFC 8785 cannot canonicalize (duplicate
// names, lone surrogates, numbers beyond binary64: see the package doc) is
// refused with a *[SyntaxError] wrapping one of the sentinel errors of this
// package; Unicode noncharacters are accepted.
func Transform(src []byte) ([]byte, error) {
	return Options{}.Transform(src)
}

// Append appends the canonical form of src to dst, with the default Options,
// so that a caller can reuse one buffer across calls. See [Options.Append].
func Append(dst, src []byte) ([]byte, error) {
	return Options{}.Append(dst, src)
}
