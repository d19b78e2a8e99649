package idemotel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/idemotel"
	"github.com/idemledger/idemledger/ledger"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// setup returns an observer recording into a fresh SDK meter provider, and
// the provider's in-memory reader.
func setup(t testing.TB, opts idemotel.Options) (ledger.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	opts.MeterProvider = provider
	obs, err := idemotel.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return obs, reader
}

// collect returns what the reader holds, which must be this package's
// scope alone.
func collect(t testing.TB, reader *sdkmetric.ManualReader) metricdata.ScopeMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if len(rm.ScopeMetrics) != 1 {
		t.Fatalf("collected %d scopes, want 1", len(rm.ScopeMetrics))
	}
	return rm.ScopeMetrics[0]
}

// point is one expected attribute set: the events recorded with it and
// their durations, in the order they were observed.
type point struct {
	attrs     []attribute.KeyValue
	durations []time.Duration
}

// want builds the expected scope: one counter point and one histogram
// point per attribute set.
func want(points ...point) metricdata.ScopeMetrics {
	var sums []metricdata.DataPoint[int64]
	var hists []metricdata.HistogramDataPoint[float64]
	for _, p := range points {
		set := attribute.NewSet(p.attrs...)
		sums = append(sums, metricdata.DataPoint[int64]{Attributes: set, Value: int64(len(p.durations))})
		h := metricdata.HistogramDataPoint[float64]{
			Attributes:   set,
			Count:        uint64(len(p.durations)),
			Bounds:       idemotel.DurationBounds,
			BucketCounts: make([]uint64, len(idemotel.DurationBounds)+1),
		}
		for i, d := range p.durations {
			s := d.Seconds()
			h.Sum += s
			if lo, _ := h.Min.Value(); i == 0 || s < lo {
				h.Min = metricdata.NewExtrema(s)
			}
			if hi, _ := h.Max.Value(); i == 0 || s > hi {
				h.Max = metricdata.NewExtrema(s)
			}
			// Buckets hold (previous bound, bound]; the last one the rest.
			b := 0
			for b < len(idemotel.DurationBounds) && s > idemotel.DurationBounds[b] {
				b++
			}
			h.BucketCounts[b]++
		}
		hists = append(hists, h)
	}
	return metricdata.ScopeMetrics{
		Scope: instrumentation.Scope{Name: idemotel.ScopeName, SchemaURL: semconv.SchemaURL},
		Metrics: []metricdata.Metrics{
			{
				Name:        "idemledger.events",
				Description: "Events of idempotency-protected requests: claims, replays, refusals, stored and released outcomes, store failures.",
				Unit:        "{event}",
				Data: metricdata.Sum[int64]{
					Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: sums,
				},
			},
			{
				Name:        "idemledger.event.duration",
				Description: "Time from the start of the idempotency layer's work on a request to the event.",
				Unit:        "s",
				Data: metricdata.Histogram[float64]{
					Temporality: metricdata.CumulativeTemporality, DataPoints: hists,
				},
			},
		},
	}
}

func kind(s string) attribute.KeyValue   { return idemotel.KindKey.String(s) }
func reason(s string) attribute.KeyValue { return idemotel.ReasonKey.String(s) }
func op(s string) attribute.KeyValue     { return idemotel.OperationKey.String(s) }
func method(s string) attribute.KeyValue { return attribute.String("http.request.method", s) }
func route(s string) attribute.KeyValue  { return attribute.String("http.route", s) }
func status(n int) attribute.KeyValue    { return attribute.Int("http.response.status_code", n) }
func rpcMethod(s string) attribute.KeyValue {
	return attribute.String("rpc.method", s)
}
func rpcCode(s string) attribute.KeyValue { return attribute.String("rpc.response.status_code", s) }

var grpcSystem = attribute.String("rpc.system.name", "grpc")

var msgProcess = attribute.String("messaging.operation.type", "process")

func msgDest(s string) attribute.KeyValue { return attribute.String("messaging.destination.name", s) }

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestObserve(t *testing.T) {
	const pay = "/payments.v1.Payments/Pay"
	tests := []struct {
		name      string
		maxRoutes int
		events    []ledger.Event
		want      []point
	}{{
		name: "first request, stored",
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: "POST", Route: "POST /orders/{id}", Duration: ms(0.3)},
			{Kind: ledger.EventStored, Method: "POST", Route: "POST /orders/{id}", Status: 201, Duration: ms(40)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("/orders/{id}")}, []time.Duration{ms(0.3)}},
			{[]attribute.KeyValue{kind("stored"), method("POST"), route("/orders/{id}"), status(201)}, []time.Duration{ms(40)}},
		},
	}, {
		name: "retries: replays add up per attribute set, refusals apart",
		events: []ledger.Event{
			{Kind: ledger.EventReplayed, Method: "POST", Route: "/orders", Status: 201, Duration: ms(0.2)},
			{Kind: ledger.EventReplayed, Method: "POST", Route: "/orders", Status: 201, Duration: ms(3)},
			{Kind: ledger.EventReplayed, Method: "POST", Route: "/orders", Status: 201, Duration: ms(12)},
			{Kind: ledger.EventReplayed, Method: "POST", Route: "/orders", Status: 400, Duration: ms(1)},
			{Kind: ledger.EventInFlight, Method: "POST", Route: "/orders", Status: 409, Duration: ms(1)},
			{Kind: ledger.EventKeyReused, Method: "POST", Route: "/orders", Status: 422, Duration: ms(2)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("replayed"), method("POST"), route("/orders"), status(201)}, []time.Duration{ms(0.2), ms(3), ms(12)}},
			{[]attribute.KeyValue{kind("replayed"), method("POST"), route("/orders"), status(400)}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("in_flight"), method("POST"), route("/orders"), status(409)}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("key_reused"), method("POST"), route("/orders"), status(422)}, []time.Duration{ms(2)}},
		},
	}, {
		name: "released and stored, with their reasons",
		events: []ledger.Event{
			{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic, Method: "PUT", Route: "/a", Status: 500, Duration: ms(5)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonStatus, Method: "PUT", Route: "/a", Status: 503, Duration: ms(6)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonOversized, Method: "PUT", Route: "/a", Status: 200, Duration: ms(7)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonFlush, Method: "PUT", Route: "/a", Status: 200, Duration: ms(8)},
			{Kind: ledger.EventStored, Reason: ledger.ReasonOversized, Method: "PUT", Route: "/a", Status: 500, Duration: ms(9)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("released"), reason("panic"), method("PUT"), route("/a"), status(500)}, []time.Duration{ms(5)}},
			{[]attribute.KeyValue{kind("released"), reason("status"), method("PUT"), route("/a"), status(503)}, []time.Duration{ms(6)}},
			{[]attribute.KeyValue{kind("released"), reason("oversized"), method("PUT"), route("/a"), status(200)}, []time.Duration{ms(7)}},
			{[]attribute.KeyValue{kind("released"), reason("flush"), method("PUT"), route("/a"), status(200)}, []time.Duration{ms(8)}},
			{[]attribute.KeyValue{kind("stored"), reason("oversized"), method("PUT"), route("/a"), status(500)}, []time.Duration{ms(9)}},
		},
	}, {
		name: "store failures and lost leases, with the operation",
		events: []ledger.Event{
			{Kind: ledger.EventStoreBusy, Op: "claim", Method: "POST", Route: "/a", Status: 503, Duration: ms(5000)},
			{Kind: ledger.EventStoreUnavailable, Op: "complete", Method: "POST", Route: "/a", Duration: ms(30000),
				Err: errors.New("dial tcp: connection refused")},
			{Kind: ledger.EventLeaseLost, Op: "complete", Method: "POST", Route: "/a", Duration: ms(700)},
			{Kind: ledger.EventStoreUnavailable, Op: "extend", Method: "POST", Route: "/a", Duration: ms(100)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("store_busy"), op("claim"), method("POST"), route("/a"), status(503)}, []time.Duration{ms(5000)}},
			{[]attribute.KeyValue{kind("store_unavailable"), op("complete"), method("POST"), route("/a")}, []time.Duration{ms(30000)}},
			{[]attribute.KeyValue{kind("lease_lost"), op("complete"), method("POST"), route("/a")}, []time.Duration{ms(700)}},
			{[]attribute.KeyValue{kind("store_unavailable"), op("extend"), method("POST"), route("/a")}, []time.Duration{ms(100)}},
		},
	}, {
		name: "methods: the known ones, case-sensitively; others are _OTHER; none is left out",
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: "PATCH", Route: "/a"},
			{Kind: ledger.EventClaimed, Method: "QUERY", Route: "/a"},
			{Kind: ledger.EventClaimed, Method: "post", Route: "/a"},
			{Kind: ledger.EventClaimed, Method: "PROPFIND", Route: "/a"},
			{Kind: ledger.EventClaimed, Method: strings.Repeat("X", 300), Route: "/a"},
			{Kind: ledger.EventClaimed, Route: "/a"},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), method("PATCH"), route("/a")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("QUERY"), route("/a")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("_OTHER"), route("/a")}, []time.Duration{0, 0, 0}},
			{[]attribute.KeyValue{kind("claimed"), route("/a")}, []time.Duration{0}},
		},
	}, {
		name: "routes: a pattern's method dropped, its host kept, none left out",
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: "POST", Route: "POST /orders/{id}"},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "POST \t/orders/{id}"},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/orders/{id}"},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "example.com/orders/{id}"},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/files/{name...} x"},
			{Kind: ledger.EventClaimed, Method: "POST"},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("/orders/{id}")}, []time.Duration{0, 0, 0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("example.com/orders/{id}")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("/files/{name...} x")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST")}, []time.Duration{0}},
		},
	}, {
		name: "message consumers: operation type process, destination the consumer's name",
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: "consume", Route: "orders", Duration: ms(1)},
			{Kind: ledger.EventStored, Method: "consume", Route: "orders", Duration: ms(9)},
			{Kind: ledger.EventReplayed, Method: "consume", Route: "orders", Duration: ms(2)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Method: "consume", Route: "orders", Duration: ms(4)},
			{Kind: ledger.EventInFlight, Method: "consume", Duration: ms(1)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), msgProcess, msgDest("orders")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("stored"), msgProcess, msgDest("orders")}, []time.Duration{ms(9)}},
			{[]attribute.KeyValue{kind("replayed"), msgProcess, msgDest("orders")}, []time.Duration{ms(2)}},
			{[]attribute.KeyValue{kind("released"), reason("error"), msgProcess, msgDest("orders")}, []time.Duration{ms(4)}},
			{[]attribute.KeyValue{kind("in_flight"), msgProcess}, []time.Duration{ms(1)}},
		},
	}, {
		name: "gRPC: method and code names; 0 is OK only where an outcome is certain",
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: pay, Route: pay, Duration: ms(1)},
			{Kind: ledger.EventStored, Method: pay, Route: pay, Duration: ms(20)},
			{Kind: ledger.EventReplayed, Method: pay, Route: pay, Duration: ms(1)},
			{Kind: ledger.EventReplayed, Method: pay, Route: pay, Status: 5, Duration: ms(1)},
			{Kind: ledger.EventInFlight, Method: pay, Route: pay, Status: 10, Duration: ms(1)},
			{Kind: ledger.EventKeyReused, Method: pay, Route: pay, Status: 9, Duration: ms(1)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonError, Method: pay, Route: pay, Status: 16, Duration: ms(1)},
			{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic, Method: pay, Route: pay, Duration: ms(1)},
			{Kind: ledger.EventStoreUnavailable, Op: "claim", Method: pay, Route: pay, Status: 14, Duration: ms(1)},
			{Kind: ledger.EventStored, Method: pay, Route: pay, Status: 17, Duration: ms(1)},
			{Kind: ledger.EventStored, Method: pay, Route: pay, Status: -1, Duration: ms(1)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), grpcSystem, rpcMethod("payments.v1.Payments/Pay")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("stored"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("OK")}, []time.Duration{ms(20)}},
			{[]attribute.KeyValue{kind("replayed"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("OK")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("replayed"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("NOT_FOUND")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("in_flight"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("ABORTED")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("key_reused"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("FAILED_PRECONDITION")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("released"), reason("error"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("UNAUTHENTICATED")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("released"), reason("panic"), grpcSystem, rpcMethod("payments.v1.Payments/Pay")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("store_unavailable"), op("claim"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("UNAVAILABLE")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("stored"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("17")}, []time.Duration{ms(1)}},
			{[]attribute.KeyValue{kind("stored"), grpcSystem, rpcMethod("payments.v1.Payments/Pay"), rpcCode("-1")}, []time.Duration{ms(1)}},
		},
	}, {
		name:      "MaxRoutes: later new routes and methods are _OTHER, known ones stay",
		maxRoutes: 3,
		events: []ledger.Event{
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/a"},
			{Kind: ledger.EventClaimed, Method: "POST"}, // no route: not counted
			{Kind: ledger.EventClaimed, Method: "POST", Route: "POST /b"},
			{Kind: ledger.EventClaimed, Method: pay},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/c"},
			{Kind: ledger.EventClaimed, Method: "/x.Y/Z"},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/d"},
			{Kind: ledger.EventStored, Method: "POST", Route: "/d", Status: 200},
			{Kind: ledger.EventClaimed, Method: "POST", Route: "/b"},
			{Kind: ledger.EventClaimed, Method: "GET", Route: "/a"},
		},
		want: []point{
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("/a")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("GET"), route("/a")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("/b")}, []time.Duration{0, 0}},
			{[]attribute.KeyValue{kind("claimed"), grpcSystem, rpcMethod("payments.v1.Payments/Pay")}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), method("POST"), route("_OTHER")}, []time.Duration{0, 0}},
			{[]attribute.KeyValue{kind("stored"), method("POST"), route("_OTHER"), status(200)}, []time.Duration{0}},
			{[]attribute.KeyValue{kind("claimed"), grpcSystem, rpcMethod("_OTHER")}, []time.Duration{0}},
		},
	}, {
		name: "the ledger's cache: hits and misses by operation, with no request attributes",
		events: []ledger.Event{
			{Kind: ledger.EventCacheHit, Op: "claim", Duration: ms(0.01)},
			{Kind: ledger.EventCacheHit, Op: "claim", Duration: ms(0.02)},
			{Kind: ledger.EventCacheMiss, Op: "claim", Duration: ms(0.4)},
			{Kind: ledger.EventCacheHit, Op: "mutate", Duration: ms(0.01)},
			{Kind: ledger.EventCacheMiss, Op: "lookup", Duration: ms(0.3)},
		},
		want: []point{
			{[]attribute.KeyValue{kind("cache_hit"), op("claim")}, []time.Duration{ms(0.01), ms(0.02)}},
			{[]attribute.KeyValue{kind("cache_miss"), op("claim")}, []time.Duration{ms(0.4)}},
			{[]attribute.KeyValue{kind("cache_hit"), op("mutate")}, []time.Duration{ms(0.01)}},
			{[]attribute.KeyValue{kind("cache_miss"), op("lookup")}, []time.Duration{ms(0.3)}},
		},
	}, {
		name: "an unknown kind is recorded as unknown",
		events: []ledger.Event{
			{Kind: ledger.EventKind(200), Method: "POST", Route: "/a"},
			{Kind: 0, Method: "POST", Route: "/a"},
		},
		want: []point{
			{[]attribute.KeyValue{kind("unknown"), method("POST"), route("/a")}, []time.Duration{0, 0}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, reader := setup(t, idemotel.Options{MaxRoutes: tt.maxRoutes})
			for _, e := range tt.events {
				obs.Observe(context.Background(), e)
			}
			metricdatatest.AssertEqual(t, want(tt.want...), collect(t, reader), metricdatatest.IgnoreTimestamp())
		})
	}
}

// TestBuckets spells out the histogram's buckets for durations on and
// around the bounds, so that a change of DurationBounds or of the unit
// shows here and not only in want's arithmetic.
func TestBuckets(t *testing.T) {
	obs, reader := setup(t, idemotel.Options{})
	for _, d := range []time.Duration{
		0, 500 * time.Microsecond, 501 * time.Microsecond, 4 * time.Millisecond,
		time.Second, 1001 * time.Millisecond, 10 * time.Second, time.Minute,
	} {
		obs.Observe(context.Background(), ledger.Event{Kind: ledger.EventStored, Method: "POST", Route: "/a", Status: 201, Duration: d})
	}
	got := collect(t, reader).Metrics[1].Data.(metricdata.Histogram[float64]).DataPoints
	if len(got) != 1 {
		t.Fatalf("got %d histogram points, want 1", len(got))
	}
	wantBounds := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	wantCounts := []uint64{2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1}
	if fmt.Sprint(got[0].Bounds) != fmt.Sprint(wantBounds) {
		t.Errorf("bounds %v, want %v", got[0].Bounds, wantBounds)
	}
	if fmt.Sprint(got[0].BucketCounts) != fmt.Sprint(wantCounts) {
		t.Errorf("bucket counts %v, want %v", got[0].BucketCounts, wantCounts)
	}
	if got[0].Count != 8 || got[0].Sum != 0+0.0005+0.000501+0.004+1+1.001+10+60 {
		t.Errorf("count %d sum %v, want 8 and %v", got[0].Count, got[0].Sum, 0+0.0005+0.000501+0.004+1+1.001+10+60)
	}
}

// TestNothingSecret: the cause of a failure may quote a key, a scope or
// the request's content; no attribute may carry it.
func TestNothingSecret(t *testing.T) {
	obs, reader := setup(t, idemotel.Options{})
	obs.Observe(context.Background(), ledger.Event{
		Kind: ledger.EventStoreUnavailable, Op: "claim", Method: "POST", Route: "/a",
		Err: errors.New(`claim key "SECRET-KEY" in scope "SECRET-SCOPE": refused`),
	})
	for _, m := range collect(t, reader).Metrics {
		var sets []attribute.Set
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		}
		if len(sets) != 1 {
			t.Fatalf("%s: %d points, want 1", m.Name, len(sets))
		}
		for _, s := range sets {
			if enc := s.Encoded(attribute.DefaultEncoder()); strings.Contains(enc, "SECRET") {
				t.Errorf("%s records %s", m.Name, enc)
			}
		}
	}
}

// TestConcurrent observes from many goroutines at once, across more
// routes than MaxRoutes, so that the race detector sees the cache grow
// while it is read.
func TestConcurrent(t *testing.T) {
	obs, reader := setup(t, idemotel.Options{MaxRoutes: 10})
	const goroutines, perG = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				obs.Observe(context.Background(), ledger.Event{
					Kind: ledger.EventKind(1 + i%9), Method: "POST",
					Route: fmt.Sprintf("/r%d", (g*perG+i)%40), Status: 200 + i%3,
				})
			}
		})
	}
	wg.Wait()
	sm := collect(t, reader)
	var total int64
	routes := map[string]bool{}
	for _, p := range sm.Metrics[0].Data.(metricdata.Sum[int64]).DataPoints {
		total += p.Value
		r, _ := p.Attributes.Value("http.route")
		routes[r.AsString()] = true
	}
	if total != goroutines*perG {
		t.Errorf("counted %d events, want %d", total, goroutines*perG)
	}
	if len(routes) != 11 || !routes["_OTHER"] {
		t.Errorf("recorded routes %v, want 10 and _OTHER", routes)
	}
}

func TestDefaultMeterProvider(t *testing.T) {
	prev := otel.GetMeterProvider()
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	otel.SetMeterProvider(provider)

	obs, err := idemotel.New(idemotel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(context.Background(), ledger.Event{Kind: ledger.EventReplayed, Method: "POST", Route: "/a", Status: 201, Duration: ms(2)})
	metricdatatest.AssertEqual(t,
		want(point{[]attribute.KeyValue{kind("replayed"), method("POST"), route("/a"), status(201)}, []time.Duration{ms(2)}}),
		collect(t, reader), metricdatatest.IgnoreTimestamp())
}

// refusingMeter fails to create the instrument named fail.
type refusingMeter struct {
	noop.Meter
	fail string
}

var errRefused = errors.New("refused")

func (m refusingMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	if name == m.fail {
		return nil, errRefused
	}
	return noop.Int64Counter{}, nil
}

func (m refusingMeter) Float64Histogram(name string, _ ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	if name == m.fail {
		return nil, errRefused
	}
	return noop.Float64Histogram{}, nil
}

type refusingProvider struct {
	noop.MeterProvider
	fail string
}

func (p refusingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return refusingMeter{fail: p.fail}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    idemotel.Options
		wantIs  error
		wantMsg string
	}{
		{"negative MaxRoutes", idemotel.Options{MaxRoutes: -1}, idemotel.ErrMaxRoutes, "idemotel: MaxRoutes is negative: -1"},
		{"counter refused", idemotel.Options{MeterProvider: refusingProvider{fail: "idemledger.events"}}, errRefused,
			"idemotel: creating the counter idemledger.events: refused"},
		{"histogram refused", idemotel.Options{MeterProvider: refusingProvider{fail: "idemledger.event.duration"}}, errRefused,
			"idemotel: creating the histogram idemledger.event.duration: refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := idemotel.New(tt.opts)
			if obs != nil || !errors.Is(err, tt.wantIs) || err.Error() != tt.wantMsg {
				t.Errorf("New = %v, %v; want nil, %q", obs, err, tt.wantMsg)
			}
		})
	}
}

// TestPastTheCache: once the observer keeps no more attribute sets, the
// sets it does not keep are still recorded, each on its own point.
func TestPastTheCache(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(0))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	obs, err := idemotel.New(idemotel.Options{MeterProvider: provider})
	if err != nil {
		t.Fatal(err)
	}
	const kinds, statuses = 9, 460 // 4140 sets, more than the 4096 kept
	for range 2 {
		for k := range kinds {
			for s := range statuses {
				obs.Observe(context.Background(), ledger.Event{
					Kind: ledger.EventKind(1 + k), Method: "POST", Route: "/a", Status: 100 + s,
				})
			}
		}
	}
	points := collect(t, reader).Metrics[0].Data.(metricdata.Sum[int64]).DataPoints
	if len(points) != kinds*statuses {
		t.Fatalf("%d points, want %d", len(points), kinds*statuses)
	}
	for _, p := range points {
		if p.Value != 2 {
			t.Fatalf("%s counted %d, want 2", p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
		}
	}
}
