package idemhttp

import (
	"log/slog"
	"net/http"
	"time"
)

// eventKind names something that happened to a protected request. Every
// log record of the middleware and of TxHandler is one event, written by
// config.emit alone, so that the events can later be handed to a hook
// instead of (or besides) the logger.
type eventKind int

const (
	evReplayed         eventKind = iota // a stored answer was sent again (Info)
	evInFlight                          // 409: the key is held by a running request (Info)
	evKeyReused                         // 422: the key was used for another request (Warn)
	evReleased                          // the claim was given back: a retry runs the handler again (Warn)
	evNotStored                         // the handler's answer was replaced by a marker (Warn)
	evKept                              // after the commit point, an answer that would have released the key was stored (Warn)
	evCompleteFailed                    // storing the answer failed (Error)
	evReleaseFailed                     // giving the claim back failed (Error)
	evLeaseLost                         // the lease was taken over while the handler ran (Error)
	evExtendFailed                      // a heartbeat could not extend the lease; it tries again (Warn)
	evStoreBusy                         // the store's lock was not free in time: 503 with Retry-After (Warn)
	evStoreUnavailable                  // the store failed: 503, or the handler unprotected with FailOpen (Error)
	evStoredNotHTTP                     // the stored outcome has no HTTP status (Error)
	evTxTooLarge                        // TxHandler: the answer was too long to store, rolled back (Error)
)

// events gives each kind its log level and message.
var events = map[eventKind]struct {
	level slog.Level
	msg   string
}{
	evReplayed:         {slog.LevelInfo, "idempotency: replayed"},
	evInFlight:         {slog.LevelInfo, "idempotency: in flight"},
	evKeyReused:        {slog.LevelWarn, "idempotency: reused"},
	evReleased:         {slog.LevelWarn, "idempotency: released"},
	evNotStored:        {slog.LevelWarn, "idempotency: answer not stored"},
	evKept:             {slog.LevelWarn, "idempotency: stored after the commit point"},
	evCompleteFailed:   {slog.LevelError, "idempotency: completion failed"},
	evReleaseFailed:    {slog.LevelError, "idempotency: release failed"},
	evLeaseLost:        {slog.LevelError, "idempotency: lease lost while the handler runs"},
	evExtendFailed:     {slog.LevelWarn, "idempotency: lease extension failed"},
	evStoreBusy:        {slog.LevelWarn, "idempotency: store busy"},
	evStoreUnavailable: {slog.LevelError, "idempotency: store unavailable"},
	evStoredNotHTTP:    {slog.LevelError, "idempotency: stored outcome is no HTTP answer"},
	evTxTooLarge:       {slog.LevelError, "idempotency: response too large to store"},
}

// reason says why an answer was not stored as it was, or why a claim was
// released.
type reason string

const (
	reasonPanic     reason = "panic"     // the handler panicked
	reasonStatus    reason = "status"    // ShouldStore rejected the status
	reasonOversized reason = "oversized" // the body was longer than MaxBodyBytes
	reasonFlush     reason = "flush"     // the handler flushed (streamed) its answer
	reasonTrailers  reason = "trailers"  // the handler announced trailers
	reasonHijack    reason = "hijack"    // the handler took the connection over
)

// event is one occurrence, with the details that apply to it (zero
// otherwise).
type event struct {
	kind       eventKind
	reason     reason
	status     int
	took       time.Duration
	retryAfter int64 // seconds
	retryIn    time.Duration
	limit      int64 // bytes
	failOpen   bool
	err        error
}

// emit records e for request r. p, when not nil, blots the key and the
// scope out of the error's text: neither is ever logged.
func (cfg *config) emit(r *http.Request, p *prepared, e event) {
	ev := events[e.kind]
	ctx := r.Context()
	if !cfg.log.Enabled(ctx, ev.level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("method", r.Method), slog.String("path", r.URL.Path))
	if e.reason != "" {
		attrs = append(attrs, slog.String("reason", string(e.reason)))
	}
	if e.status != 0 {
		attrs = append(attrs, slog.Int("status", e.status))
	}
	if e.took != 0 {
		attrs = append(attrs, slog.Duration("took", e.took))
	}
	if e.retryAfter != 0 {
		attrs = append(attrs, slog.Int64("retry_after_s", e.retryAfter))
	}
	if e.retryIn != 0 {
		attrs = append(attrs, slog.Duration("retry_in", e.retryIn))
	}
	if e.limit != 0 {
		attrs = append(attrs, slog.Int64("limit", e.limit))
	}
	if e.kind == evStoreUnavailable {
		attrs = append(attrs, slog.Bool("fail_open", e.failOpen))
	}
	if e.err != nil {
		msg := e.err.Error()
		if p != nil {
			msg = p.redact(e.err)
		}
		attrs = append(attrs, slog.String("error", msg))
	}
	cfg.log.LogAttrs(ctx, ev.level, ev.msg, attrs...)
}
