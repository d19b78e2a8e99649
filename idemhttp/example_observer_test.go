package idemhttp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// The middleware's events go to slog through ledger.LogObserver and,
// beside it, to a counter per kind and route, as a metrics observer would
// count them (package idemotel records them as OpenTelemetry metrics).
// The route is the ServeMux pattern, never the path with its id; neither
// observer sees the key or the scope.
func ExampleOptions_observer() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()

	// Log records without their time and duration, so that the output
	// stays the same from run to run.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	var mu sync.Mutex
	counts := map[string]int{}
	metrics := ledger.ObserverFunc(func(_ context.Context, e ledger.Event) {
		mu.Lock()
		defer mu.Unlock()
		counts[e.Kind.String()+" "+e.Route]++
	})

	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope:    tenant,
		Observer: ledger.Observers(ledger.LogObserver(logger), metrics),
	})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/pay", mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	send(srv.URL+"/orders/7/pay", "POST", `{"amount":250}`, "pay-7")
	send(srv.URL+"/orders/7/pay", "POST", `{"amount":250}`, "pay-7")
	send(srv.URL+"/orders/7/pay", "POST", `{"amount":999}`, "pay-7")
	mu.Lock()
	fmt.Println(counts)
	mu.Unlock()
	// Output:
	// level=DEBUG msg="idempotency: claimed" method=POST route="POST /orders/{id}/pay"
	// level=DEBUG msg="idempotency: stored" method=POST route="POST /orders/{id}/pay" status=201
	// 201
	// level=INFO msg="idempotency: replayed" method=POST route="POST /orders/{id}/pay" status=201
	// 201
	// level=WARN msg="idempotency: key_reused" method=POST route="POST /orders/{id}/pay" status=422
	// 422 {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's","code":"key-reused"}
	// map[claimed POST /orders/{id}/pay:1 key_reused POST /orders/{id}/pay:1 replayed POST /orders/{id}/pay:1 stored POST /orders/{id}/pay:1]
}
