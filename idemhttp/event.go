package idemhttp

import (
	"net/http"

	"github.com/idemledger/idemledger/internal/redact"
	"github.com/idemledger/idemledger/ledger"
)

// reason says why an answer was not stored as the handler gave it, or why
// a claim was released. It is finer than ledger.Reason: the marker of a
// hijacked connection keeps "hijack", and the events name it as
// ledger.ReasonFlush (see eventReason).
type reason string

const (
	reasonPanic     reason = "panic"     // the handler panicked
	reasonStatus    reason = "status"    // ShouldStore rejected the status
	reasonOversized reason = "oversized" // the body was longer than MaxBodyBytes
	reasonFlush     reason = "flush"     // the handler flushed (streamed) its answer
	reasonTrailers  reason = "trailers"  // the handler announced trailers
	reasonHijack    reason = "hijack"    // the handler took the connection over
	// reasonCommitted: the run passed its commit point and vanished before
	// its answer was stored (ledger.ErrCommitted); never stored itself.
	reasonCommitted reason = "committed"
)

// eventReason is the Reason of why in the events: an answer that left
// before it could be stored whole (flushed, with trailers, or over a
// hijacked connection) is ledger.ReasonFlush.
func eventReason(why reason) ledger.Reason {
	switch why {
	case reasonTrailers, reasonHijack:
		return ledger.ReasonFlush
	}
	return ledger.Reason(why)
}

// emit reports e, an event of the protected request p, to
// Options.Observer: every event of Middleware and TxHandler goes through
// it. It sets Method, Route and Duration (since the middleware began its
// work on p), and blots the key and the scope out of Err.
func (cfg *config) emit(p *prepared, e ledger.Event) {
	if cfg.observer == nil {
		return
	}
	e.Method, e.Route, e.Transport = p.r.Method, p.route, ledger.TransportHTTP
	e.HasStatus = e.HasStatus || e.Status != 0 // HTTP has no status 0
	e.Duration = cfg.now().Sub(p.start)
	if e.Err != nil {
		e.Err = redact.Error(e.Err, p.req.Key, p.req.Scope)
	}
	cfg.observer.Observe(p.r.Context(), e)
}

// route returns the route pattern of r for the events: r.Pattern, set by
// the ServeMux that routed r to the middleware, or, when the middleware
// wraps a ServeMux itself, the pattern that mux is about to match. It is
// empty otherwise, never the raw path: a path holds ids, and a metric
// attribute made of it would grow without bound.
func route(r *http.Request, next http.Handler) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	if mux, ok := next.(*http.ServeMux); ok {
		_, pattern := mux.Handler(r)
		return pattern
	}
	return ""
}
