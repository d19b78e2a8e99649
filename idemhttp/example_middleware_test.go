package idemhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// The middleware on one route of a ServeMux: the first POST runs the
// handler, a retry with the same key replays its answer.
func ExampleMiddleware() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()
	payments := 0
	createPayment := func(w http.ResponseWriter, r *http.Request) {
		payments++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment":%d}`, payments)
	}

	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Api-Key"), nil }, // required
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", mw(http.HandlerFunc(createPayment)))

	srv := httptest.NewServer(mux)
	defer srv.Close()
	for range 2 {
		send(srv.URL+"/payments", "POST", `{"amount":250}`, "pay-1", "Idempotent-Replayed")
	}
	fmt.Println("payments:", payments)
	// Output:
	// 201 {"payment":1}
	// 201 Idempotent-Replayed=true {"payment":1}
	// payments: 1
}

// A handler that calls a provider outside the database records the call
// as a step: a retry that resumes the request gets the step's recorded
// result without calling again. The provider deduplicates by the key the
// step derives, as payment providers do with their idempotency keys.
func ExampleStep() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()
	charges := map[string]string{} // the provider's own idempotency records
	charge := func(key string) string {
		if id, ok := charges[key]; ok {
			return id
		}
		charges[key] = fmt.Sprintf("ch_%d", len(charges)+1)
		return charges[key]
	}

	bookRide := func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id, err := idemhttp.Step(ctx, "charge", func(ctx context.Context, key string) ([]byte, error) {
			return []byte(charge(key)), nil // forward key to the provider
		})
		if err != nil {
			http.Error(w, "payment failed", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%q}`, id)
	}
	srv := httptest.NewServer(idemhttp.Middleware(l, idemhttp.Options{Scope: tenant})(http.HandlerFunc(bookRide)))
	defer srv.Close()
	for range 2 {
		send(srv.URL, "POST", `{"rider":"ann"}`, "ride-1", "Idempotent-Replayed")
	}
	fmt.Println("charges:", len(charges))
	// Output:
	// 201 {"charge":"ch_1"}
	// 201 Idempotent-Replayed=true {"charge":"ch_1"}
	// charges: 1
}
