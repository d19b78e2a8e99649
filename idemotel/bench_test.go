package idemotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemledger/idemledger/idemotel"
	"github.com/idemledger/idemledger/ledger"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// benchEvents are the two events of a first request on one route.
var benchEvents = [2]ledger.Event{
	{Kind: ledger.EventClaimed, Method: "POST", Route: "POST /orders/{id}", Duration: 300 * time.Microsecond},
	{Kind: ledger.EventStored, Method: "POST", Route: "POST /orders/{id}", Status: 201, Duration: 40 * time.Millisecond},
}

// BenchmarkObserve measures one event recorded into the SDK (and, under
// noop, the observer's own work alone); per-call-set builds the attribute
// set on every call, as metric.WithAttributes does, for comparison.
func BenchmarkObserve(b *testing.B) {
	sdk := func(b *testing.B) metric.MeterProvider {
		p := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p
	}
	run := func(b *testing.B, obs ledger.Observer) {
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			obs.Observe(ctx, benchEvents[i&1])
		}
	}
	b.Run("sdk", func(b *testing.B) {
		obs, err := idemotel.New(idemotel.Options{MeterProvider: sdk(b)})
		if err != nil {
			b.Fatal(err)
		}
		run(b, obs)
	})
	b.Run("sdk-parallel", func(b *testing.B) {
		obs, err := idemotel.New(idemotel.Options{MeterProvider: sdk(b)})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				obs.Observe(ctx, benchEvents[i&1])
			}
		})
	})
	b.Run("noop", func(b *testing.B) {
		obs, err := idemotel.New(idemotel.Options{MeterProvider: noop.NewMeterProvider()})
		if err != nil {
			b.Fatal(err)
		}
		run(b, obs)
	})
	b.Run("per-call-set", func(b *testing.B) {
		m := sdk(b).Meter("bench")
		events, _ := m.Int64Counter("idemledger.events")
		duration, _ := m.Float64Histogram("idemledger.event.duration",
			metric.WithExplicitBucketBoundaries(idemotel.DurationBounds...))
		run(b, ledger.ObserverFunc(func(ctx context.Context, e ledger.Event) {
			kv := make([]attribute.KeyValue, 0, 4)
			kv = append(kv, idemotel.KindKey.String(e.Kind.String()),
				attribute.String("http.request.method", e.Method), attribute.String("http.route", e.Route))
			if e.Status != 0 {
				kv = append(kv, attribute.Int("http.response.status_code", e.Status))
			}
			set := attribute.NewSet(kv...)
			events.Add(ctx, 1, metric.WithAttributeSet(set))
			duration.Record(ctx, e.Duration.Seconds(), metric.WithAttributeSet(set))
		}))
	})
}
