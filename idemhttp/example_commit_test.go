package idemhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// A handler that charges a card and then fails marks its commit point
// right after the charge: from then on its failure is stored and replayed,
// so a retry cannot charge again. Without the mark, the 503 would release
// the key and every retry would charge once more.
func ExampleCommit() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()

	var charges atomic.Int32
	h := idemhttp.Middleware(l, idemhttp.Options{Scope: tenant})(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			charges.Add(1) // the irreversible effect: a call to the payment provider
			idemhttp.Commit(r.Context())
			// Recording the charge fails: a 503 that a retry must not repeat.
			http.Error(w, "ledger of charges unavailable", http.StatusServiceUnavailable)
		}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	for range 3 {
		send(srv.URL, "POST", `{"amount":250}`, "charge-5", "Idempotent-Replayed")
	}
	fmt.Println("charges:", charges.Load())
	// Output:
	// 503 ledger of charges unavailable
	// 503 Idempotent-Replayed=true ledger of charges unavailable
	// 503 Idempotent-Replayed=true ledger of charges unavailable
	// charges: 1
}

// A handler reads the claim that protects it: the client's key, to forward
// to an upstream service that takes idempotency keys too, the scope, and
// the fence, to store beside its own writes.
func ExampleClaimFrom() {
	l, _, cleanup := openLedger(ledger.Options{})
	defer cleanup()

	h := idemhttp.Middleware(l, idemhttp.Options{Scope: tenant})(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			c, ok := idemhttp.ClaimFrom(r.Context())
			if !ok {
				fmt.Fprintln(w, "unprotected")
				return
			}
			upstream, _ := http.NewRequest("POST", "https://payments.example/charges", nil)
			idemhttp.SetKey(upstream.Header, c.Key) // a retry here is a retry there
			fmt.Fprintf(w, "scope=%s fence=%d upstream %s: %s\n", c.Scope, c.Fence,
				idemhttp.HeaderName, upstream.Header.Get(idemhttp.HeaderName))
		}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	send(srv.URL, "POST", `{}`, "order-17")
	send(srv.URL, "POST", `{}`, "")
	// Output:
	// 200 scope=public fence=1 upstream Idempotency-Key: "order-17"
	// 200 unprotected
}
