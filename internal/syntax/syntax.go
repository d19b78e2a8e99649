// Package syntax is the HTTP syntax that idemhttp (the server) and
// idemclient (the client) share, so that both refuse the same input with
// the same words: the character set of an idempotency key, methods and
// field names.
package syntax

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemledger/idemledger/internal/token"
)

// ErrInvalid is idemhttp's and idemclient's ErrInvalidKey.
var ErrInvalid = errors.New("invalid Idempotency-Key")

// Check enforces the character set of a key: printable ASCII, space
// included. A bare key (quoted false) may not hold a comma: an intermediary
// that joins two field lines puts one there, so a bare comma cannot be told
// from two keys. It returns a *[CharError], or nil.
func Check(key string, quoted bool) error {
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c > 0x7e {
			return &CharError{c: c, offset: i}
		}
		if c == ',' && !quoted {
			return &CharError{c: c, offset: i, comma: true}
		}
	}
	return nil
}

// CharError is a key refused for one byte; it wraps ErrInvalid. Its text,
// and Problem, name the byte and its offset, never the key.
type CharError struct {
	c      byte
	offset int
	comma  bool // a comma in a bare key
}

func (e *CharError) Error() string { return ErrInvalid.Error() + ": " + e.Problem() }

// Unwrap returns ErrInvalid.
func (e *CharError) Unwrap() error { return ErrInvalid }

// Problem says what is wrong and how to send the key instead.
func (e *CharError) Problem() string {
	if e.comma {
		return fmt.Sprintf("it holds a comma (offset %d) outside quotes, which is what a proxy makes of two "+
			"Idempotency-Key lines; send such a key quoted, as an RFC 9651 string: \"...\"", e.offset)
	}
	return fmt.Sprintf("byte 0x%02x at offset %d is not printable ASCII (0x20 to 0x7E)", e.c, e.offset)
}

// CheckMethods refuses, naming field, a method that is not a token or that
// is a standard method in another case.
func CheckMethods(field string, methods []string) error {
	for _, m := range methods {
		if !token.Valid(m) {
			return fmt.Errorf("%s: %q is not a method (a token, RFC 9110 Section 9.1)", field, m)
		}
		if up := strings.ToUpper(m); up != m && standardMethods[up] {
			return fmt.Errorf("%s: %q is not %q: methods are case-sensitive (RFC 9110 Section 9.1)", field, m, up)
		}
	}
	return nil
}

// CheckFieldName refuses, naming field, a name that is set and is not a
// field name.
func CheckFieldName(field, name string) error {
	if name != "" && !token.Valid(name) {
		return fmt.Errorf("%s: %q is not a field name (RFC 9110 Section 5.1)", field, name)
	}
	return nil
}

// standardMethods are the methods of RFC 9110 Section 9 and PATCH (RFC
// 5789): written in lower case, they are a mistake.
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true,
	http.MethodTrace: true, http.MethodPatch: true,
}
