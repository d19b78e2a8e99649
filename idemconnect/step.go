package idemconnect

import (
	"context"

	"github.com/idemledger/idemledger/lifecycle"
)

// Step runs the step name of the call whose context is ctx once across
// every run of the call: a step an earlier run recorded (one that crashed,
// lost its lease, or failed and was released) returns its result without
// calling fn; otherwise fn runs with a key derived for name, to forward to
// the outside service as its idempotency key, and its result is recorded
// before Step returns. A retry of a call whose run passed its commit point
// and recorded steps resumes it instead of getting CodeDataLoss. See
// [lifecycle.Run.Step] for the contract; in a call without a key, fn runs
// with an empty key and nothing is recorded. The interceptor's Ledger must
// keep steps too ([lifecycle.StepLedger]; a *ledger.Ledger does), or Step
// returns [lifecycle.ErrNoSteps].
func Step(ctx context.Context, name string, fn func(ctx context.Context, key string) ([]byte, error)) ([]byte, error) {
	r, _ := lifecycle.FromContext(ctx)
	return r.Step(ctx, name, fn)
}
