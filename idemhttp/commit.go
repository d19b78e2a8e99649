package idemhttp

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// Claim is what protects a request, as its handler sees it ([ClaimFrom]).
type Claim struct {
	// Scope is the owner of the key, as [Options.Scope] returned it.
	Scope string
	// Key is the client's idempotency key, decoded (without the sf-string
	// quotes): the value to forward to an upstream service that takes
	// idempotency keys too, so that a retry here is a retry there.
	Key string
	// Fence is the claim's fence ([ledger.Claim.Fence]): it grows at every
	// takeover of the key, so a handler that stores it beside its own
	// writes can refuse a write that carries a smaller one (a run whose
	// lease was taken over). Zero under [TxHandler] alone, whose writes the
	// transaction guards instead.
	Fence int64
	// CommittedAt is non-zero when this run recovers ([Options.Recover]) a
	// request whose earlier run passed its commit point at that time and
	// then vanished without an answer: the effect was made, so look it up
	// (by Key, which an upstream service can be asked about) and answer
	// from it rather than make it again.
	CommittedAt time.Time
}

// ctxKey is the context key of the claim a Middleware or TxHandler holds.
type ctxKey struct{}

// held is the claim under which a request is served.
type held struct {
	l     any // the *ledger.Ledger[TTx] that holds the claim
	req   ledger.Request
	fence int64
	// run is a Middleware's lease-mode run, the only kind a commit point
	// applies to; nil under TxHandler.
	run *lifecycle.Run
}

func heldFrom(ctx context.Context) *held {
	h, _ := ctx.Value(ctxKey{}).(*held)
	return h
}

// ClaimFrom returns the claim that protects the request whose context is
// ctx, and true, inside a handler served by Middleware or TxHandler. It
// returns false for a request that runs unprotected (no key, a method that
// is not protected, [FailOpen] while the store is down) and for any other
// context. Under both (a [TxHandler] route under a Middleware) it returns the
// Middleware's claim, with the client's key.
func ClaimFrom(ctx context.Context) (Claim, bool) {
	h := heldFrom(ctx)
	if h == nil {
		return Claim{}, false
	}
	c := Claim{Scope: h.req.Scope, Key: h.req.Key, Fence: h.fence}
	if h.run != nil {
		c.CommittedAt = h.run.Recovered()
	}
	return c, true
}

// Commit marks the commit point of the request whose context is ctx: the
// handler has made its irreversible effect (charged the card, sent the
// message), so running it again would repeat that effect. From then on the
// Middleware that protects the request stores whatever the handler's run
// ends with, and retries replay it; without a commit point, such endings
// release the key so that a retry runs the handler again. Past it:
//
//   - a panic is stored as a 500 problem document (CodeHandlerPanicked),
//     and the panic goes on;
//   - a status that Options.ShouldStore rejects (a 503, say) is stored;
//   - a flushed answer, or one with trailers, is stored as far as it was
//     captured (without the trailers);
//   - an answer longer than Options.MaxBodyBytes, or a hijacked
//     connection, is stored as a marker, whatever
//     Options.ReleaseOversized says: retries get 410
//     (CodeOutcomeNotStored).
//
// The mark is also written into the key's record before Commit returns
// ([ledger.Ledger.Commit], one guarded statement, retried through
// connection faults within the lease): should the process die before the
// answer is stored, a retry after the lease runs out gets 410
// ([CodeOutcomeNotStored]) instead of a second run, or, with
// [Options.Recover], runs the handler knowing it ([Claim.CommittedAt]). A
// store that fails or blocks meanwhile is waited out, each failed attempt
// reported (EventStoreUnavailable, EventStoreBusy or EventOutcomeUnknown
// with Op "commit"), for as long as [lifecycle.Run.Commit] says.
//
// Commit reports whether a Middleware's claim protects the request, and
// so whether the mark has any effect. It returns false for an unprotected
// request, under [TxHandler] alone, whose commit point is the commit of its
// transaction, and when the claim's lease is lost (see Lease loss in the
// package doc): the answer will not be stored, and a retry may run the
// handler again. It may be called more than once, from any goroutine;
// the record is written once, and every call returns after that write.
func Commit(ctx context.Context) bool {
	h := heldFrom(ctx)
	if h == nil || h.run == nil {
		return false
	}
	return h.run.Commit(ctx)
}
