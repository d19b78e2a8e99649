//go:build !go1.27

package idemhttp

import "net/http"

// headerValueLimit is the number of header lines (values) net/http's server
// reads before it answers 431 by itself: zero, none, before Go 1.27 (only
// MaxHeaderBytes bounds them).
const headerValueLimit = 0

// allowHeaderValues lets srv read n header lines (values): before Go 1.27
// there is no such limit to raise.
func allowHeaderValues(*http.Server, int) {}
