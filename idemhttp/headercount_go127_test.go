//go:build go1.27

package idemhttp

import "net/http"

// headerValueLimit is the number of header lines (values) net/http's server
// reads before it answers 431 by itself, without calling the handler: from
// Go 1.27 on, Server.MaxHeaderValueCount, by default
// http.DefaultMaxHeaderValueCount (500). Zero means no such limit.
const headerValueLimit = http.DefaultMaxHeaderValueCount

// allowHeaderValues lets srv read n header lines (values).
func allowHeaderValues(srv *http.Server, n int) { srv.MaxHeaderValueCount = n }
