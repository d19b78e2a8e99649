package idemotel_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/idemledger/idemledger/idemotel"
	"github.com/idemledger/idemledger/ledger"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Metrics and logs from one observer: the layers' observer option takes
// what ledger.Observers returns. A program would give the meter provider a
// periodic reader and an exporter (OTLP, Prometheus); the in-memory
// reader here shows what they would receive.
func Example() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	metrics, err := idemotel.New(idemotel.Options{MeterProvider: provider})
	if err != nil {
		log.Fatal(err)
	}
	// LogObserver(nil) logs through slog.Default; in this example to
	// stdout, without times, so that the output can be checked.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
	obs := ledger.Observers(ledger.LogObserver(nil), metrics)

	// What a layer such as idemhttp's middleware reports for a first
	// request and two retries of it.
	ctx := context.Background()
	const method, pattern = "POST", "POST /orders/{id}"
	obs.Observe(ctx, ledger.Event{Kind: ledger.EventClaimed, Method: method, Route: pattern, Duration: time.Millisecond})
	obs.Observe(ctx, ledger.Event{Kind: ledger.EventStored, Method: method, Route: pattern, Status: 201, Duration: 40 * time.Millisecond})
	obs.Observe(ctx, ledger.Event{Kind: ledger.EventReplayed, Method: method, Route: pattern, Status: 201, Duration: 2 * time.Millisecond})
	obs.Observe(ctx, ledger.Event{Kind: ledger.EventReplayed, Method: method, Route: pattern, Status: 201, Duration: 2 * time.Millisecond})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s %s: %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				lines = append(lines, fmt.Sprintf("%s %s: count %d, sum %gs", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count, p.Sum))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// level=INFO msg="idempotency: replayed" method=POST route="POST /orders/{id}" status=201 duration=2ms
	// level=INFO msg="idempotency: replayed" method=POST route="POST /orders/{id}" status=201 duration=2ms
	// idemledger.event.duration http.request.method=POST,http.response.status_code=201,http.route=/orders/{id},idemledger.event.kind=replayed: count 2, sum 0.004s
	// idemledger.event.duration http.request.method=POST,http.response.status_code=201,http.route=/orders/{id},idemledger.event.kind=stored: count 1, sum 0.04s
	// idemledger.event.duration http.request.method=POST,http.route=/orders/{id},idemledger.event.kind=claimed: count 1, sum 0.001s
	// idemledger.events http.request.method=POST,http.response.status_code=201,http.route=/orders/{id},idemledger.event.kind=replayed: 2
	// idemledger.events http.request.method=POST,http.response.status_code=201,http.route=/orders/{id},idemledger.event.kind=stored: 1
	// idemledger.events http.request.method=POST,http.route=/orders/{id},idemledger.event.kind=claimed: 1
}
