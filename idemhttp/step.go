package idemhttp

import (
	"context"

	"github.com/idemledger/idemledger/lifecycle"
)

// Step runs the step name of the request whose context is ctx once across
// every run of the request under a Middleware: a step an earlier run
// recorded (one that crashed, lost its lease, or failed and was released)
// returns its result without calling fn; otherwise fn runs with a key
// derived for name, to forward to the outside service as its idempotency
// key, and its result is recorded before Step returns. A retry of a
// request whose run passed its commit point and recorded steps resumes it
// instead of getting 410 ([CodeOutcomeNotStored]). See [lifecycle.Run.Step]
// for the contract. ctx is the handler's r.Context() or any context made
// from it (context.WithoutCancel's included): Step finds the request's
// claim there, as [ClaimFrom] does.
//
// For a request no Middleware's claim protects (no key, [FailOpen] while
// the store is down, [TxHandler] alone, whose transaction is one step) fn
// runs with an empty key and nothing is recorded.
func Step(ctx context.Context, name string, fn func(ctx context.Context, key string) ([]byte, error)) ([]byte, error) {
	var r *lifecycle.Run
	if h := heldFrom(ctx); h != nil {
		r = h.run
	}
	return r.Step(ctx, name, fn)
}
