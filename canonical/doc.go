// Package canonical writes the canonical form of JSON text as defined by
// RFC 8785, the JSON Canonicalization Scheme (JCS): the byte sequence that
// any conforming implementation, in any language, produces for the same
// JSON value, so that a digest of it (see package hash) identifies the value
// rather than its spelling.
//
// The canonical form (RFC 8785 section 3.2) has no whitespace; object
// members are sorted by the UTF-16 code units of their names (section
// 3.2.3); strings use the fewest escapes (section 3.2.2.2); numbers are
// parsed to the nearest IEEE 754 binary64, however many digits they are
// written with, and printed as ECMAScript's Number.prototype.toString
// prints them (section 3.2.2.3, ECMA-262 section 6.1.6.1.20), which
// [FormatFloat] exposes.
//
// Input must be I-JSON (RFC 7493) in the properties RFC 8785 section 3.1
// relies on: duplicate member names, invalid UTF-8, lone surrogate escapes,
// numbers beyond binary64 and the other faults that the sentinel errors
// ([ErrDuplicateName] and its siblings) name are refused with a *[SyntaxError]
// that carries the byte offset and wraps one sentinel error, never
// repaired. Numbers that are too small for binary64 become 0, as
// ECMAScript's JSON.parse makes them. Unicode noncharacters (U+FDD0..U+FDEF,
// U+FFFE, U+FFFF and the last two code points of every other plane) are
// accepted and written as raw UTF-8, as V8 and the other RFC 8785
// implementations write them; [Options.RefuseNoncharacters] refuses them with
// [ErrNoncharacter], for strict I-JSON (RFC 7493 section 2.1). Arrays and
// objects may nest [DefaultMaxDepth] (10,000) levels deep, or [Options.MaxDepth].
//
// Canonical form can change the decimal value of a number that binary64
// cannot hold (9007199254740993 prints as 9007199254740992). Callers that
// must not conflate two such amounts set [Options.ExactNumbers], which refuses
// them with ErrInexactNumber.
//
// Transform and Append use a single pass over the input and scratch space
// from a sync.Pool; every function here is safe for concurrent use.
package canonical
