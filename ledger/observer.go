package ledger

import (
	"context"
	"log/slog"
	"time"
)

// EventKind says what happened to one protected request. The protection
// layers (idemhttp's Middleware and TxHandler, the gRPC interceptor) report
// one or more events per request to an [Observer].
type EventKind uint8

// The events. A first request reports Claimed, then Stored or Released; a
// retry reports Replayed, InFlight or KeyReused; the store's failures
// report StoreBusy or StoreUnavailable, with the operation in [Event.Op].
const (
	// EventClaimed: the key was claimed and the handler runs.
	EventClaimed EventKind = iota + 1
	// EventReplayed: the request was answered with the stored outcome.
	EventReplayed
	// EventInFlight: refused, the key's first request still runs
	// ([ErrInFlight]).
	EventInFlight
	// EventKeyReused: refused, the key came with another fingerprint
	// ([ErrKeyReused]).
	EventKeyReused
	// EventStored: the outcome was stored; retries replay it.
	EventStored
	// EventReleased: the claim was dropped and nothing stored, so a retry
	// runs the handler again; [Event.Reason] says why.
	EventReleased
	// EventLeaseLost: another request took the key over while the handler
	// ran ([ErrLeaseLost]): its outcome cannot be stored.
	EventLeaseLost
	// EventStoreBusy: the store stayed locked by another writer past its
	// timeout (SQLite's SQLITE_BUSY); a retry may succeed.
	EventStoreBusy
	// EventStoreUnavailable: the store failed otherwise (unreachable,
	// refused, timed out).
	EventStoreUnavailable
	// EventOutcomeUnknown: the store's answer to the operation in Op was
	// lost ([ErrOutcomeUnknown]: the connection broke after the statement
	// may have run) and retrying within the lease did not settle it, so it
	// may or may not have taken effect.
	EventOutcomeUnknown
	// EventCommitted: the handler marked its commit point and the mark was
	// written into the record ([Ledger.Commit]).
	EventCommitted
	// EventCacheHit: the ledger answered a claim or a lookup (Op "claim",
	// "lookup", "mutate", "recall") from its cache of completed outcomes, without
	// the database: a replay, or ErrKeyReused. Reported by the ledger to
	// [Options.Observer], not by the integrations.
	EventCacheHit
	// EventCacheMiss: the ledger answered a claim or a lookup from a
	// completed record it read from the database because its cache did
	// not hold it (another replica completed it, it was evicted, or this
	// process had not read it yet); the record is kept from then on,
	// unless Mutate read it in a transaction it did not commit itself
	// (the caller's may have written it). A claim that finds no completed
	// record is neither a hit nor a miss. Reported like EventCacheHit.
	EventCacheMiss
)

var eventNames = [...]string{
	EventClaimed: "claimed", EventReplayed: "replayed", EventInFlight: "in_flight",
	EventKeyReused: "key_reused", EventStored: "stored", EventReleased: "released",
	EventLeaseLost: "lease_lost", EventStoreBusy: "store_busy", EventStoreUnavailable: "store_unavailable",
	EventOutcomeUnknown: "outcome_unknown", EventCommitted: "committed",
	EventCacheHit: "cache_hit", EventCacheMiss: "cache_miss",
}

// String returns the kind in snake_case ("in_flight", "key_reused"), the
// form used in log records and metric attributes.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Reason says why a claim was released without an outcome
// ([EventReleased]), or why an outcome was stored in a form other than the
// handler's answer ([EventStored]).
type Reason string

// The reasons the layers of this module report.
const (
	// ReasonPanic: the handler panicked.
	ReasonPanic Reason = "panic"
	// ReasonStatus: the status is one the store policy does not keep
	// (by default 5xx, 408, 409, 425, 429, 499).
	ReasonStatus Reason = "status"
	// ReasonOversized: the answer was larger than the layer may store.
	ReasonOversized Reason = "oversized"
	// ReasonFlush: the handler flushed, hijacked the connection or
	// announced trailers, so the answer left before it could be stored
	// whole.
	ReasonFlush Reason = "flush"
	// ReasonError: the handler returned an error (gRPC) or its
	// transaction failed.
	ReasonError Reason = "error"
)

// Event is one thing that happened to a protected request. It never holds
// the idempotency key or the scope: observers feed logs and metrics, where
// neither belongs.
type Event struct {
	Kind EventKind
	// Reason qualifies [EventReleased] and [EventStored]; empty otherwise.
	Reason Reason
	// Op is the ledger operation that failed ("claim", "commit",
	// "complete", "release", "extend"), for [EventStoreBusy],
	// [EventStoreUnavailable], [EventOutcomeUnknown] and [EventLeaseLost]; empty
	// otherwise.
	Op string
	// Method is the HTTP request method, or the gRPC full method name
	// ("/package.Service/Method").
	Method string
	// Route is the matched route pattern (http.Request.Pattern, a
	// router's template) when the layer knows one, else empty, never the
	// raw path, which would make a metric series per id; the gRPC full
	// method name for gRPC.
	Route string
	// Status is the answer's HTTP status or gRPC code when HasStatus is
	// set, 0 otherwise.
	Status int
	// HasStatus reports whether the event carries an answer's status in
	// Status: gRPC's OK is 0, so Status alone cannot say.
	HasStatus bool
	// Transport names the layer that reported the event ([TransportHTTP],
	// [TransportRPC], [TransportMessage]); empty from a layer that names none.
	Transport string
	// Duration is the time from the start of the layer's work on the
	// request to the event.
	Duration time.Duration
	// Err is the cause of a failure event, with any key or scope it
	// quoted blotted out; nil for the others.
	Err error
}

// The transports of this module's layers, for [Event.Transport].
const (
	// TransportHTTP: idemhttp's Middleware and TxHandler, and the layers
	// built on them. Method is the HTTP method, Status an HTTP status.
	TransportHTTP = "http"
	// TransportRPC: idemgrpc and idemconnect. Method is the full method
	// name ("/package.Service/Method"), Status a gRPC code.
	TransportRPC = "rpc"
	// TransportMessage: a message consumer (package consume). Method is
	// "consume", Route the consumer's name; there is no status.
	TransportMessage = "message"
)

// Observer receives the events of protected requests. Observe is called
// on the request's goroutine, synchronously, so it must be quick and must
// not block; it may be called from many goroutines at once.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to [Observer].
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Observers returns an Observer that passes every event to each of obs in
// turn; nil entries are skipped.
func Observers(obs ...Observer) Observer {
	var list []Observer
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	return ObserverFunc(func(ctx context.Context, e Event) {
		for _, o := range list {
			o.Observe(ctx, e)
		}
	})
}

// LogObserver returns an Observer that writes each event as one slog
// record, "idempotency: <kind>", with the attributes method, route,
// status, reason, op, duration and error where set. Levels: Debug for
// claimed, committed, stored, cache hit and cache miss, Info for replayed and in flight, Warn for key
// reused, released and store busy, Error for lease lost and store
// unavailable and outcome unknown. A nil logger means slog.Default().
func LogObserver(l *slog.Logger) Observer {
	return ObserverFunc(func(ctx context.Context, e Event) {
		lg := l
		if lg == nil {
			lg = slog.Default()
		}
		level := eventLevel(e.Kind)
		if !lg.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 7)
		attrs = append(attrs, slog.String("method", e.Method), slog.String("route", e.Route))
		if e.Status != 0 {
			attrs = append(attrs, slog.Int("status", e.Status))
		}
		if e.Reason != "" {
			attrs = append(attrs, slog.String("reason", string(e.Reason)))
		}
		if e.Op != "" {
			attrs = append(attrs, slog.String("op", e.Op))
		}
		attrs = append(attrs, slog.Duration("duration", e.Duration))
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", e.Err.Error()))
		}
		lg.LogAttrs(ctx, level, "idempotency: "+e.Kind.String(), attrs...)
	})
}

func eventLevel(k EventKind) slog.Level {
	switch k {
	case EventClaimed, EventStored, EventCommitted, EventCacheHit, EventCacheMiss:
		return slog.LevelDebug
	case EventReplayed, EventInFlight:
		return slog.LevelInfo
	case EventLeaseLost, EventStoreUnavailable, EventOutcomeUnknown:
		return slog.LevelError
	}
	return slog.LevelWarn
}
