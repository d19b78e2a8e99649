package clients_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// stripeClient is a stripe-go client of the shop, retrying up to retries
// times (stripe-go's own backoff: 0.5 s, 1 s, 2.5 s, …).
func stripeClient(s *shop, retries int64) *stripe.Client {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(s.srv.URL),
		HTTPClient:        s.srv.Client(),
		MaxNetworkRetries: stripe.Int64(retries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient("sk_test_idemledger", stripe.WithBackends(backends))
}

func paymentIntent(n int64) string {
	return fmt.Sprintf(`{"id":"pi_%d","object":"payment_intent","amount":1250,"currency":"eur"}`, n)
}

func createIntent(ctx context.Context, c *stripe.Client, key string, amount int64) (*stripe.PaymentIntent, error) {
	p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(amount), Currency: stripe.String("eur")}
	p.SetIdempotencyKey(key)
	return c.V1PaymentIntents.Create(ctx, p)
}

// TestStripeGo: stripe-go (v82) against a server with
// idemhttp.WriteStripeError, on every driver. Its bare key with a space
// ("order 42") is accepted; a duplicate sent while the first request runs
// (800 ms) is answered 429 lock_timeout, which stripe-go retries, and ends
// with the first request's stored answer; the key reused for another
// amount is an idempotency_error that stripe-go does not retry.
func TestStripeGo(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		s := &shop{delay: 800 * time.Millisecond, status: 200, body: paymentIntent}
		s.start(t, engine, idemhttp.Options{Refuse: idemhttp.WriteStripeError})
		c := stripeClient(s, 3)
		ctx := context.Background()

		var wg sync.WaitGroup
		intents := make([]*stripe.PaymentIntent, 2)
		errs := make([]error, 2)
		for i := range intents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 1 {
					time.Sleep(100 * time.Millisecond) // the duplicate arrives while the first runs
				}
				intents[i], errs[i] = createIntent(ctx, c, "order 42", 1250)
			}()
		}
		wg.Wait()
		for i := range intents {
			if errs[i] != nil || intents[i].ID != "pi_1" {
				t.Errorf("call %d: %+v, %v; want pi_1", i, intents[i], errs[i])
			}
		}
		if n := s.effectsOf("order 42"); n != 1 {
			t.Errorf("%d effects, want 1", n)
		}
		if n := s.hitsOf("order 42"); n < 3 {
			t.Errorf("%d requests with the key, want the first, the duplicate, and at least one retry of it", n)
		}

		before := s.hitsOf("order 42")
		_, err := createIntent(ctx, c, "order 42", 99)
		var se *stripe.Error
		if !errors.As(err, &se) || se.Type != "idempotency_error" || se.HTTPStatusCode != 400 {
			t.Errorf("key reused: %v; want a 400 idempotency_error", err)
		}
		if n := s.hitsOf("order 42") - before; n != 1 {
			t.Errorf("the reused key was sent %d times; want once, not retried", n)
		}
	})
}
