package idemhttp_test

import (
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/idemledger/idemledger/idemhttp"
)

// WriteStripeError answers the middleware's refusals in Stripe's error
// shape, with the statuses stripe-go retries as the middleware means them.
func ExampleWriteStripeError() {
	for _, ref := range []idemhttp.Refusal{
		{Status: 409, Code: idemhttp.CodeInFlight, Detail: "a request with this idempotency key is in flight", RetryAfter: time.Second},
		{Status: 422, Code: idemhttp.CodeKeyReused, Detail: "this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's"},
		{Status: 410, Code: idemhttp.CodeOutcomeNotStored, Detail: "its answer could not be kept"},
	} {
		w := httptest.NewRecorder()
		idemhttp.WriteStripeError(w, httptest.NewRequest("POST", "/v1/charges", nil), ref)
		fmt.Print(w.Code, " Stripe-Should-Retry: ", w.Header().Get("Stripe-Should-Retry"), " ", w.Body.String())
	}
	// Output:
	// 429 Stripe-Should-Retry: true {"error":{"type":"invalid_request_error","code":"lock_timeout","message":"a request with this idempotency key is in flight"}}
	// 400 Stripe-Should-Retry: false {"error":{"type":"idempotency_error","code":"idempotency_key_reused","message":"this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's"}}
	// 410 Stripe-Should-Retry: false {"error":{"type":"api_error","code":"outcome_not_stored","message":"its answer could not be kept"}}
}
