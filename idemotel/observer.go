package idemotel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/ledger"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// ScopeName is the instrumentation scope (meter) name under which the
// instruments are created: this package's import path.
const ScopeName = "github.com/idemledger/idemledger/idemotel"

// The instruments' names and units (UCUM, as OpenTelemetry writes them);
// the package documentation describes them and their attributes.
const (
	// EventsName is the name of the Int64Counter that counts events.
	EventsName = "idemledger.events"
	// EventsUnit is its unit: a count of events.
	EventsUnit = "{event}"
	// DurationName is the name of the Float64Histogram of Event.Duration.
	DurationName = "idemledger.event.duration"
	// DurationUnit is its unit: seconds.
	DurationUnit = "s"

	eventsDesc    = "Events of idempotency-protected requests: claims, replays, refusals, stored and released outcomes, store failures."
	durationsDesc = "Time from the start of the idempotency layer's work on a request to the event."
)

// The attribute keys of this package's own attributes.
const (
	// KindKey is the event's kind, ledger.EventKind.String(): "claimed",
	// "committed", "replayed", "in_flight", "key_reused", "stored",
	// "released", "lease_lost", "store_busy", "store_unavailable",
	// "outcome_unknown", "cache_hit", "cache_miss".
	KindKey = attribute.Key("idemledger.event.kind")
	// ReasonKey is the event's ledger.Reason, when it has one.
	ReasonKey = attribute.Key("idemledger.event.reason")
	// OperationKey is the ledger operation that failed (Event.Op), when
	// the event has one.
	OperationKey = attribute.Key("idemledger.event.operation")
)

// DefaultMaxRoutes is the number of distinct routes recorded when
// Options.MaxRoutes is 0.
const DefaultMaxRoutes = 256

// Other is the value recorded in place of an HTTP method that is not one
// of the known methods, and of a route past Options.MaxRoutes: the
// semantic conventions' placeholder for values left out to bound
// cardinality.
const Other = "_OTHER"

// DurationBounds are the histogram's explicit bucket boundaries, in
// seconds: those the semantic conventions advise for
// http.server.request.duration, preceded by 0.5, 1 and 2.5 ms, because a
// claim or a replay from the store usually takes less than 5 ms. A View
// can replace them.
var DurationBounds = []float64{
	0.0005, 0.001, 0.0025,
	0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
}

// ErrMaxRoutes is returned by [New] when Options.MaxRoutes is negative.
var ErrMaxRoutes = errors.New("idemotel: MaxRoutes is negative")

// Options configure [New]. The zero value is ready to use.
type Options struct {
	// MeterProvider supplies the meter named [ScopeName]; nil means
	// otel.GetMeterProvider() at the time of New.
	MeterProvider metric.MeterProvider
	// MaxRoutes bounds the distinct non-empty routes (http.route and
	// rpc.method values) recorded: once that many have been seen, events
	// with a new one are recorded with the value [Other]. 0 means
	// [DefaultMaxRoutes]; negative is an error ([ErrMaxRoutes]).
	MaxRoutes int
}

// maxCached bounds the attribute sets kept for reuse; events whose set
// is not kept build it on each call, which allocates but holds no memory.
const maxCached = 4096

// New returns an Observer that records every event on the instruments
// described in the package documentation. It fails when Options are
// invalid or the meter refuses an instrument (the error wraps the
// meter's). The Observer is safe for use by many goroutines at once.
func New(opts Options) (ledger.Observer, error) {
	if opts.MaxRoutes < 0 {
		return nil, fmt.Errorf("%w: %d", ErrMaxRoutes, opts.MaxRoutes)
	}
	if opts.MaxRoutes == 0 {
		opts.MaxRoutes = DefaultMaxRoutes
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	events, err := m.Int64Counter(EventsName,
		metric.WithUnit(EventsUnit), metric.WithDescription(eventsDesc))
	if err != nil {
		return nil, fmt.Errorf("idemotel: creating the counter %s: %w", EventsName, err)
	}
	duration, err := m.Float64Histogram(DurationName,
		metric.WithUnit(DurationUnit), metric.WithDescription(durationsDesc),
		metric.WithExplicitBucketBoundaries(DurationBounds...))
	if err != nil {
		return nil, fmt.Errorf("idemotel: creating the histogram %s: %w", DurationName, err)
	}
	return &observer{
		events:    events,
		duration:  duration,
		maxRoutes: opts.MaxRoutes,
		routes:    make(map[routeKey]*routeSeries),
	}, nil
}

// observer records events. Attribute sets, and the options that carry
// them, are built once per distinct set and kept, so that Observe does not
// allocate once a set has been seen: the measurement APIs take a
// precomputed option slice as they are.
type observer struct {
	events    metric.Int64Counter
	duration  metric.Float64Histogram
	maxRoutes int

	mu     sync.RWMutex
	routes map[routeKey]*routeSeries // guarded by mu, as are its series maps
	named  int                       // non-empty route names in routes, Other excluded
	cached int                       // series kept, over all routes
}

// routeKey names a route: an HTTP route or a gRPC method, normalized.
type routeKey struct {
	rpc, msg bool
	name     string
}

// seriesKey names one attribute set below a route.
type seriesKey struct {
	kind   ledger.EventKind
	reason ledger.Reason
	op     string
	method string // normalized HTTP method; "" for gRPC
	status int
	// hasStatus is Event.HasStatus: a gRPC status 0 is OK then.
	hasStatus bool
}

type routeSeries struct {
	sets map[seriesKey]*series
}

// series is one attribute set, wrapped in the options of both instruments.
type series struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

func (o *observer) Observe(ctx context.Context, e ledger.Event) {
	rk, sk := keys(e)
	o.mu.RLock()
	rs := o.routes[rk]
	if rs == nil && rk.name != "" && o.named >= o.maxRoutes {
		rs = o.routes[routeKey{rpc: rk.rpc, msg: rk.msg, name: Other}]
	}
	var s *series
	if rs != nil {
		s = rs.sets[sk]
	}
	o.mu.RUnlock()
	if s == nil {
		s = o.slow(rk, sk)
	}
	o.events.Add(ctx, 1, s.add...)
	o.duration.Record(ctx, e.Duration.Seconds(), s.rec...)
}

// slow finds or makes the series of (rk, sk) under the write lock.
func (o *observer) slow(rk routeKey, sk seriesKey) *series {
	o.mu.Lock()
	defer o.mu.Unlock()
	rs := o.routes[rk]
	if rs == nil && rk.name != "" && o.named >= o.maxRoutes {
		rk.name = Other
		rs = o.routes[rk]
	}
	if rs == nil {
		rk.name = strings.Clone(rk.name) // keep no request's memory alive
		rs = &routeSeries{sets: make(map[seriesKey]*series)}
		o.routes[rk] = rs
		if rk.name != "" && rk.name != Other {
			o.named++
		}
	}
	s := rs.sets[sk]
	if s == nil {
		set := attributes(rk, sk)
		s = &series{
			add: []metric.AddOption{metric.WithAttributeSet(set)},
			rec: []metric.RecordOption{metric.WithAttributeSet(set)},
		}
		if o.cached < maxCached {
			sk.op = strings.Clone(sk.op)
			sk.reason = ledger.Reason(strings.Clone(string(sk.reason)))
			rs.sets[sk] = s
			o.cached++
		}
	}
	return s
}

// keys normalizes an event into the keys of its attribute set, by its
// Transport. An event of a layer that names none is read by its Method: one
// that begins with "/" is a gRPC full method name, consume.EventMethod a
// message consumer's (its Route the consumer's name); anything else is an
// HTTP method.
func keys(e ledger.Event) (routeKey, seriesKey) {
	sk := seriesKey{kind: e.Kind, reason: e.Reason, op: e.Op, status: e.Status, hasStatus: e.HasStatus}
	switch {
	case e.Transport == ledger.TransportRPC, e.Transport == "" && strings.HasPrefix(e.Method, "/"):
		return routeKey{rpc: true, name: strings.TrimPrefix(e.Method, "/")}, sk
	case e.Transport == ledger.TransportMessage, e.Transport == "" && e.Method == consume.EventMethod:
		return routeKey{msg: true, name: e.Route}, sk
	}
	sk.method = httpMethod(e.Method)
	return routeKey{name: httpRoute(e.Route)}, sk
}

// attributes builds the attribute set of (rk, sk); see the package
// documentation.
func attributes(rk routeKey, sk seriesKey) attribute.Set {
	kv := make([]attribute.KeyValue, 0, 7)
	kv = append(kv, KindKey.String(sk.kind.String()))
	if sk.reason != "" {
		kv = append(kv, ReasonKey.String(string(sk.reason)))
	}
	if sk.op != "" {
		kv = append(kv, OperationKey.String(sk.op))
	}
	if rk.rpc {
		kv = append(kv, semconv.RPCSystemNameGRPC)
		if rk.name != "" {
			kv = append(kv, semconv.RPCMethodKey.String(rk.name))
		}
		if code, ok := grpcCode(sk.kind, sk.status, sk.hasStatus); ok {
			kv = append(kv, semconv.RPCResponseStatusCodeKey.String(code))
		}
		return attribute.NewSet(kv...)
	}
	if rk.msg {
		kv = append(kv, semconv.MessagingOperationTypeProcess)
		if rk.name != "" {
			kv = append(kv, semconv.MessagingDestinationNameKey.String(rk.name))
		}
		return attribute.NewSet(kv...)
	}
	if sk.method != "" {
		kv = append(kv, semconv.HTTPRequestMethodKey.String(sk.method))
	}
	if rk.name != "" {
		kv = append(kv, semconv.HTTPRouteKey.String(rk.name))
	}
	if sk.status != 0 {
		kv = append(kv, semconv.HTTPResponseStatusCodeKey.Int(sk.status))
	}
	return attribute.NewSet(kv...)
}
