package idemfiber

import (
	"context"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/lifecycle"
)

// heldKey is the context key of the claim that protects a request.
type heldKey struct{}

// claim is the claim under which a request runs.
type claim struct {
	scope string
	run   *lifecycle.Run
}

func held(ctx context.Context) *claim {
	h, _ := ctx.Value(heldKey{}).(*claim)
	return h
}

// Commit marks the commit point of c's request, as idemhttp.Commit does
// for net/http: the handler has made its irreversible effect, so from now
// on whatever the run ends with is stored (a panic as a 500 problem
// document, a status ShouldStore rejects, a streamed or oversized answer
// as a marker: retries get 410), and the mark is written into the key's
// record before Commit returns ([lifecycle.Run.Commit]).
//
// It reports whether the claim still protects the request: false for a
// request that runs unprotected, and when the lease is lost (the answer
// will not be stored and a retry may run the handler again: answer 503
// with Retry-After rather than the effect's result). Code that has only
// the context (c.Context()) reaches the same run with
// lifecycle.FromContext.
func Commit(c fiber.Ctx) bool {
	ctx := c.Context()
	h := held(ctx)
	if h == nil {
		return false
	}
	return h.run.Commit(ctx)
}

// ClaimFrom returns the claim that protects c's request, and true, inside
// a handler that New protects: the scope, the client's key (to forward to
// an upstream service that takes idempotency keys), the fence, and the
// commit time of an earlier run that this one recovers (Options.Recover).
// It returns false for a request that runs unprotected.
func ClaimFrom(c fiber.Ctx) (idemhttp.Claim, bool) {
	h := held(c.Context())
	if h == nil {
		return idemhttp.Claim{}, false
	}
	return idemhttp.Claim{Scope: h.scope, Key: h.run.Key(), Fence: h.run.Fence(), CommittedAt: h.run.Recovered()}, true
}
