// Package idemotel records the events of idempotency-protected requests
// ([ledger.Event]) as OpenTelemetry metrics. [New] returns a
// [ledger.Observer] for the layers' observer options (idemhttp, the gRPC
// interceptor) and for ledger.Options.Observer, which receives the
// ledger's own events (its cache's hits and misses); combine it with a log
// observer through [ledger.Observers].
// It is a Go module of its own, so that OpenTelemetry stays out of the
// main module's dependencies.
//
// # Instruments
//
// Both are created by the meter named [ScopeName], with the schema URL of
// semantic conventions v1.43.0, and receive one measurement per event:
//
//	name                       instrument            unit     description
//	idemledger.events          Int64Counter          {event}  events of protected requests, one per event
//	idemledger.event.duration  Float64Histogram      s        Event.Duration, from the start of the layer's work on the request to the event
//
// The histogram's buckets are [DurationBounds]. Its count for an attribute
// set equals the counter's: the counter is there because a rate of
// replays or of refusals is read more cheaply from a counter. Read the
// durations per kind: "claimed" measures the wait for the claim, "stored"
// and "released" the whole protected work including the handler,
// "replayed", "in_flight" and "key_reused" how quickly a retry was
// answered, the store's failures how long the failing call took,
// "cache_hit" and "cache_miss" how long the ledger's call took.
//
// OpenTelemetry names a library's metrics after the library itself and
// has no prefix option for them: to rename an instrument or change its
// buckets, use a View of the SDK (go.opentelemetry.io/otel/sdk/metric,
// NewView).
//
// # Attributes
//
// Both instruments carry the same attribute set. This package's own:
//
//	key                         type    when                                  values
//	idemledger.event.kind       string  always                                claimed, committed, replayed, in_flight, key_reused, stored, released, lease_lost, store_busy, store_unavailable, outcome_unknown, cache_hit, cache_miss (unknown for any other)
//	idemledger.event.reason     string  Event.Reason is set                   panic, status, oversized, flush, error
//	idemledger.event.operation  string  Event.Op is set                       claim, complete, release, extend; for cache_hit and cache_miss claim, lookup, mutate, recall
//
// From the HTTP semantic conventions, for an event whose Method is an
// HTTP method:
//
//	http.request.method        string  Method is not empty                   GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, CONNECT, TRACE, QUERY, else _OTHER
//	http.route                 string  Route is not empty                    Route without a ServeMux pattern's method: "POST /orders/{id}" is /orders/{id}
//	http.response.status_code  int     Status is not 0                       Status
//
// From the RPC semantic conventions, for an event whose Method is a gRPC
// full method name (it begins with "/"):
//
//	rpc.system.name            string  always                                grpc
//	rpc.method                 string  always                                Method without its leading "/": pkg.Service/Method
//	rpc.response.status_code   string  Status is not 0, or the event is      the code's name: OK, NOT_FOUND, ABORTED, ...;
//	                                   stored or replayed (0 is then OK)     a number outside gRPC's codes as digits
//
// From the messaging semantic conventions, for an event of a message
// consumer (package consume; Method is consume.EventMethod):
//
//	messaging.operation.type   string  always                                process
//	messaging.destination.name string  Route is not empty                    Route: consume.Options.Name, a topic or handler name
//
// The idempotency key and the scope are never recorded: [ledger.Event]
// does not hold them, and Event.Err, which may quote the request's
// content, is not recorded either.
//
// # Cardinality
//
// Every attribute takes few values, so that the number of series stays
// bounded: the method is one of the known methods or _OTHER, since any
// client can send any method; http.route must be a route pattern
// (http.Request.Pattern, a router's template such as /orders/{id}), never
// a raw path, which the semantic conventions forbid in http.route. A layer
// that knows no pattern for a request should leave Event.Route empty. As a
// safeguard, at most Options.MaxRoutes distinct routes and gRPC methods are
// recorded (consumer names among them); later new ones are recorded as _OTHER. The SDK adds its own
// limit per instrument (2000 attribute sets by default).
//
// # Cost
//
// Observe runs on every protected request. It keeps one attribute set per
// distinct combination of attributes, built the first time that
// combination is seen, so that recording allocates nothing afterwards
// (BenchmarkObserve); at most 4096 sets are kept, and a combination past
// that builds its set on each call.
package idemotel
