// Package token checks the token syntax of HTTP (RFC 9110 Section 5.6.2),
// which methods (Section 9.1) and field names (Section 5.1) share, for the
// packages that accept either from their callers.
package token

import "strings"

// Valid reports whether s is a token: one or more tchar.
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
