package idemgin

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
)

// ginKey is the request context key of the *gin.Context.
type ginKey struct{}

// Context returns the *gin.Context of a request that Wrap passes to its
// middleware, for an idemhttp Options.Scope function that reads what an
// earlier Gin middleware stored with c.Set. It reports false for a request
// that did not come through Wrap.
func Context(r *http.Request) (*gin.Context, bool) {
	c, ok := r.Context().Value(ginKey{}).(*gin.Context)
	return c, ok
}

// Wrap returns a Gin handler that runs mw, a net/http middleware such as
// idemhttp.Middleware's result, around the rest of the Gin chain. When mw
// calls its next handler, the rest of the chain runs with mw's request and
// response writer; when it answers by itself, the chain is aborted. The
// request mw gets has the Gin route as its Pattern (see [Pattern]) unless
// it has one already. A request that matched no Gin route (c.FullPath()
// is empty: Gin's 404 chain, or its 405 chain with HandleMethodNotAllowed)
// does not go through mw: the rest of the chain runs as if Wrap were not
// there. Wrap panics when mw is nil. The handler is safe for concurrent
// use when mw's handlers are.
func Wrap(mw func(http.Handler) http.Handler) gin.HandlerFunc {
	if mw == nil {
		panic("idemgin: Wrap needs a middleware")
	}
	return func(c *gin.Context) {
		if c.FullPath() == "" {
			// No endpoint runs: Gin runs the r.Use middleware in the
			// chain that answers 404 or 405 (and NoRoute or NoMethod
			// handlers). Storing that answer would replay it, for the
			// record's lifetime, to a key a later version's route could
			// serve. Returning lets Gin run the rest of the chain.
			return
		}
		outer, req := c.Writer, c.Request
		next := false
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next = true
			// The status Gin has set so far: 200 unless a middleware
			// before Wrap set one with c.Status, which a handler-less
			// chain would otherwise lose.
			inner := &writer{ResponseWriter: w, status: outer.Status(), size: unwritten}
			c.Writer, c.Request = inner, r
			// Restored even when a handler panics, so that gin.Recovery
			// answers on the real writer.
			defer func() { c.Writer, c.Request = outer, req }()
			c.Next()
			// Gin sends a header set with c.Status but no body only once
			// the whole chain has returned, too late for mw to see it.
			inner.WriteHeaderNow()
		}))
		r := req.WithContext(context.WithValue(req.Context(), ginKey{}, c))
		if r.Pattern == "" {
			r.Pattern = Pattern(c)
		}
		h.ServeHTTP(outer, r)
		if !next {
			c.Abort()
		}
	}
}

// Pattern returns the route that matched c's request, written as net/http
// writes a ServeMux pattern: the method, a space and Gin's route path
// (c.FullPath()), for example "POST /payments/:id". It returns "" when no
// route matched (Gin's 404 and 405 handlers). Wrap puts it in
// http.Request.Pattern, which Gin leaves empty, so that the middleware's
// observers get a route with few values rather than the raw path.
func Pattern(c *gin.Context) string {
	path := c.FullPath()
	if path == "" {
		return ""
	}
	return c.Request.Method + " " + path
}
