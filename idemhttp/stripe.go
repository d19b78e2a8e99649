package idemhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// stripeError is the body of a Stripe API error: {"error": {...}}.
type stripeError struct {
	Error stripeErrorBody `json:"error"`
}

type stripeErrorBody struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// WriteStripeError is a [RefuseFunc] for servers whose clients are built for
// Stripe's API (stripe-go and the other Stripe libraries): refusals in
// Stripe's error shape, {"error": {"type", "code", "message"}}, with the
// statuses those clients retry as the middleware means them. stripe-go
// (v82) retries a Stripe-shaped error only when it is a 429 with code
// lock_timeout, whatever Retry-After or Stripe-Should-Retry say, and
// waits its own backoff (0.5 s, 1 s, 2.5 s, 5 s …, MaxNetworkRetries
// times, 2 by default). So:
//
//	refusal                      status  type                   code
//	in flight, busy              429     invalid_request_error  lock_timeout (retried: ends in the replay)
//	key reused                   400     idempotency_error      idempotency_key_reused (Stripe's own type)
//	answer not stored            410     api_error              outcome_not_stored
//	store unavailable            503     api_error              store_unavailable
//	bad key, scope, body         its own invalid_request_error  the Code, as key-invalid
//	others                       its own api_error              the Code
//
// Stripe itself answers a concurrent duplicate with 409 idempotency_error,
// which stripe-go never retries; lock_timeout makes stripe-go wait for the
// first request and end with its stored answer. Raise MaxNetworkRetries
// for handlers slower than about 1.5 s. Stripe-Should-Retry is set to
// "false" on the refusals a retry cannot cure, for clients that read it.
func WriteStripeError(w http.ResponseWriter, r *http.Request, ref Refusal) {
	status, body := ref.Status, stripeErrorBody{Type: "api_error", Code: string(ref.Code), Message: ref.Detail}
	retry := false
	switch ref.Code {
	case CodeInFlight, CodeBusy:
		status, body.Type, body.Code, retry = http.StatusTooManyRequests, "invalid_request_error", "lock_timeout", true
	case CodeKeyReused:
		status, body.Type, body.Code = http.StatusBadRequest, "idempotency_error", "idempotency_key_reused"
	case CodeOutcomeNotStored:
		body.Code = "outcome_not_stored"
	case CodeUnavailable:
		body.Code, retry = "store_unavailable", true
	case CodeKeyMissing, CodeKeyInvalid, CodeScope, CodeBodyTooLarge, CodeBadRequest:
		body.Type = "invalid_request_error"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(stripeError{Error: body}) // strings only: always encodes
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Stripe-Should-Retry", strconv.FormatBool(retry))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
