// Package idemfiber brings idemledger's HTTP contract to Fiber
// (github.com/gofiber/fiber/v3): a handler that runs the rest of a Fiber
// chain at most once per idempotency key and answers retries with the
// first answer.
//
// It is a Go module of its own (github.com/idemledger/idemledger/idemfiber),
// so that Fiber stays out of the main module's go.mod. It is built on
// Fiber v3, the current major version, which the module proxy serves as
// stable releases (v3.0.0 and later). Fiber v2's handlers take another
// type (*fiber.Ctx, where v3 has the fiber.Ctx interface), so a v2 app
// needs a transport of its own, written the same way. It requires v3.1.0
// and is tested with it: the newest v3 release whose whole dependency
// graph the proxy served when this module was made (v3.7.0 needs a
// gofiber/utils version the proxy refused).
//
// Fiber runs on fasthttp, not net/http, so idemhttp's middleware cannot
// serve it (idemgin, on net/http, wraps it). idemfiber is a transport of
// its own, written as package lifecycle says a transport is written, with
// public API alone: lifecycle.Decide and lifecycle.Run for the decision
// and the run, idemhttp's key parser, codes, refusal document, status
// policies and record kinds for the contract, and package hash for the
// fingerprint. docs/transport.md walks through it.
//
// # The contract
//
// The answers are idemhttp.Middleware's (see that package's doc, Answers):
// 400 for a malformed, empty or over-long key (and for a missing one with
// Options.Required), 409 with Retry-After while the first request runs,
// the stored status, allowed header lines and body with
// Idempotent-Replayed: true for a retry, 422 for a key reused with another
// request, 410 for a completed request whose answer was not kept, 503
// when the store fails (or the handler unprotected with FailOpen). The
// refusals are the same RFC 9457 problem documents, with the same codes.
//
// The records are idemhttp's too: an answer is stored as an Outcome of
// kind idemhttp.KindResponse, its header lines under their canonical
// names, and the fingerprint of a request is the one idemhttp's default
// takes of it (method, request target, Content-Type and raw body, with
// hash.Request). A Fiber service and a net/http service that share a
// ledger (and a scope function that agrees) therefore share their keys: a
// retry that lands on the other service is replayed, not run again.
//
// # Where it goes
//
// Put it on the routes it protects, after the handlers that the scope
// function needs (authentication), and after Fiber's recover middleware
// when there is one:
//
//	idem := idemfiber.New(l, idemfiber.Options{Scope: tenant})
//	app.Use(recover.New(), auth)
//	app.Post("/orders", idem, createOrder)
//
// app.Use(idem) works too: a request that then matches no route (Fiber's
// 404 or 405) has its key released, never a 404 stored; the events then
// carry no route.
//
// # Storing
//
// The rest of the chain runs with a context (c.Context()) that is
// cancelled, with a cause matching ledger.ErrLeaseLost, when the lease is
// lost. When it returns an error, the app's error handler writes the
// answer at once, inside idemfiber, as Fiber would have done once the
// chain returned (the handlers outside see the error handled): the answer
// kept is the one the client gets. The answer is then stored when
// Options.ShouldStore accepts its status, and the key is released
// otherwise, so that a retry runs again. A streamed body (SendStream,
// SendStreamWriter), a hijacked connection and an answer with trailers are
// not stored either; an answer longer than MaxBodyBytes is kept as a
// marker (retries get 410). A handler that panics releases the key, and
// the panic goes on.
//
// A handler whose effect cannot be undone calls [Commit] once it is made:
// from then on every ending is stored (a panic as a 500 problem document,
// a streamed or oversized answer as a marker), and the mark is written
// into the record, so a retry after a crash gets 410 rather than a second
// effect. [ClaimFrom] gives the key to forward and the fence.
package idemfiber
