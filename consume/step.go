package consume

import (
	"context"

	"github.com/idemledger/idemledger/lifecycle"
)

// Step runs the step name of the message whose handler's context is ctx
// once across every delivery of the message: a step an earlier run
// recorded (one that crashed, lost its lease, or failed and was
// released) returns its result without calling fn; otherwise fn runs with
// a key derived for name, to forward to the outside service as its
// idempotency key, and its result is recorded before Step returns. A
// redelivery of a message whose run passed its commit point and recorded
// steps resumes it instead of going to the dead-letter path. See
// [lifecycle.Run.Step] for the contract; outside Handle's runs (HandleTx,
// whose transaction is one step) fn runs with an empty key and nothing is
// recorded.
func Step(ctx context.Context, name string, fn func(ctx context.Context, key string) ([]byte, error)) ([]byte, error) {
	r, _ := lifecycle.FromContext(ctx)
	return r.Step(ctx, name, fn)
}
