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
// response writer; when it answers by itself, the chain is aborted. Wrap
// panics when mw is nil. The handler is safe for concurrent use when mw's
// handlers are.
func Wrap(mw func(http.Handler) http.Handler) gin.HandlerFunc {
	if mw == nil {
		panic("idemgin: Wrap needs a middleware")
	}
	return func(c *gin.Context) {
		outer, req := c.Writer, c.Request
		next := false
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next = true
			inner := &writer{ResponseWriter: w, status: http.StatusOK, size: unwritten}
			c.Writer, c.Request = inner, r
			// Restored even when a handler panics, so that gin.Recovery
			// answers on the real writer.
			defer func() { c.Writer, c.Request = outer, req }()
			c.Next()
			// Gin sends a header set with c.Status but no body only once
			// the whole chain has returned, too late for mw to see it.
			inner.WriteHeaderNow()
		}))
		h.ServeHTTP(outer, req.WithContext(context.WithValue(req.Context(), ginKey{}, c)))
		if !next {
			c.Abort()
		}
	}
}
