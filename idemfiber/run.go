package idemfiber

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// run runs the rest of the chain under the claim that run holds, and ends
// the run: Complete with the answer to keep, or Release.
func (cfg *config) run(c fiber.Ctx, p *request, run *lifecycle.Run) error {
	outer := c.Context()
	// The handler's context: cancelled when the lease is lost, and
	// carrying the run for Commit, ClaimFrom and lifecycle.FromContext.
	c.SetContext(context.WithValue(run.Context(outer), heldKey{}, &claim{scope: p.req.Scope, run: run}))
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit). Before the
		// commit point the key is given back so that a retry can run;
		// after it, a 500 is stored so that a retry cannot repeat the
		// effect. The panic goes on either way.
		run.Stop()
		c.SetContext(outer)
		if run.Committed() {
			out := cfg.failure(c)
			run.Complete(out, ledger.ReasonPanic, out.Status, nil)
			return
		}
		run.Release(ledger.ReasonPanic, 0)
	}()
	if err := c.Next(); err != nil {
		// Fiber turns a handler's error into an answer only once the
		// whole chain has returned, too late to keep it: the app's error
		// handler writes it here, as Fiber would, and the chain outside
		// sees the error handled.
		if catch := c.App().ErrorHandler(c, err); catch != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	finished = true
	run.Stop()
	c.SetContext(outer)

	if !c.Matched() && !run.Committed() {
		// No endpoint ran: the request matched no route (app.Use'd, Fiber
		// runs the chain that answers 404 or 405). Storing that answer
		// would replay it, for the record's lifetime, to a key that a
		// later version's route could serve.
		run.Release(ledger.ReasonStatus, c.Response().StatusCode())
		return nil
	}
	out, why, keep := cfg.outcome(c, run.Committed())
	if !keep {
		run.Release(eventReason(why), c.Response().StatusCode())
		return nil
	}
	run.Complete(out, eventReason(why), out.Status, nil)
	return nil
}

// reason says why an answer was not stored as the handler gave it, or why
// a claim was released; the marker of an answer not kept holds it in its
// body, as idemhttp's do.
type reason string

const (
	reasonPanic     reason = "panic"     // the handler panicked
	reasonStatus    reason = "status"    // ShouldStore rejected the status
	reasonOversized reason = "oversized" // the body was longer than MaxBodyBytes
	reasonFlush     reason = "flush"     // the body was a stream (SendStream, SendStreamWriter)
	reasonTrailers  reason = "trailers"  // the answer had trailers, which a replay cannot send
	reasonHijack    reason = "hijack"    // the handler took the connection over
	reasonCommitted reason = "committed" // the run passed its commit point and vanished
)

// eventReason is why in the events: an answer that left before it could
// be stored whole is ledger.ReasonFlush, as in idemhttp's.
func eventReason(why reason) ledger.Reason {
	switch why {
	case reasonTrailers, reasonHijack:
		return ledger.ReasonFlush
	}
	return ledger.Reason(why)
}

// outcome decides what becomes of the answer in c's response: the Outcome
// to store, or keep false to release the key. why is the reason the
// answer is not stored as the handler gave it (empty when it is). The
// rules are idemhttp's.
func (cfg *config) outcome(c fiber.Ctx, committed bool) (out ledger.Outcome, why reason, keep bool) {
	resp := c.Response()
	status := resp.StatusCode()
	switch {
	case c.RequestCtx().Hijacked():
		why = reasonHijack
	case resp.IsBodyStream():
		// Reading the stream here would take it from the client.
		why = reasonFlush
	case int64(len(resp.Body())) > cfg.maxBody:
		why = reasonOversized
	case trailers(resp):
		why = reasonTrailers
	case !cfg.shouldStore(status):
		why = reasonStatus
	default:
		return cfg.response(c), "", true
	}
	switch {
	case why == reasonHijack || why == reasonFlush || why == reasonOversized:
		// Nothing replayable was kept. By default an oversized answer
		// still keeps the key, as a marker: the operation completed, and
		// a second run would repeat it.
		if committed || why == reasonOversized && !cfg.releaseOversized {
			return notStoredMarker(status, why), why, true
		}
	case committed:
		return cfg.response(c), why, true
	}
	return ledger.Outcome{}, why, false
}

// trailers reports whether resp announces trailers.
func trailers(resp *fasthttp.Response) bool {
	for range resp.Header.Trailers() {
		return true
	}
	return false
}

// notStoredMarker is the Outcome kept for a completed operation whose
// answer could not be kept: idemhttp's marker, which its replay reads too.
func notStoredMarker(status int, why reason) ledger.Outcome {
	return ledger.Outcome{Kind: idemhttp.KindNotStored, Status: status, Body: []byte(why)}
}

// failure is the Outcome stored for a handler that panicked after its
// commit point: a 500 written by Options.Refuse
// (idemhttp.CodeHandlerPanicked), captured as any answer is.
func (cfg *config) failure(c fiber.Ctx) ledger.Outcome {
	c.Response().Reset()
	_ = cfg.refuse(c, idemhttp.Refusal{Status: http.StatusInternalServerError, Code: idemhttp.CodeHandlerPanicked,
		Detail: "the request with this idempotency key made its effect, then failed; its answer is lost"})
	if int64(len(c.Response().Body())) > cfg.maxBody || c.Response().IsBodyStream() {
		return notStoredMarker(http.StatusInternalServerError, reasonPanic)
	}
	return cfg.response(c)
}
