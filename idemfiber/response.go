package idemfiber

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// response returns the answer in c's response as an Outcome of
// idemhttp.KindResponse: its status, its allowed header lines under
// their canonical names (as net/http names them, so that an idemhttp
// service replays them too) and its body. Every byte is copied: fasthttp
// reuses the response's buffers once the request is done.
func (cfg *config) response(c fiber.Ctx) ledger.Outcome {
	resp := c.Response()
	status := resp.StatusCode()
	h := make(http.Header)
	for k, v := range resp.Header.All() {
		name := http.CanonicalHeaderKey(string(k))
		if !cfg.allow[name] {
			continue
		}
		if name == "Content-Type" && !bodyAllowed(status) {
			// fasthttp lists its default type for every answer, but sends
			// none with a status that has no body.
			continue
		}
		h[name] = append(h[name], string(v))
	}
	var body []byte
	if bodyAllowed(status) && len(resp.Body()) > 0 {
		body = append([]byte(nil), resp.Body()...)
	}
	return ledger.Outcome{Kind: idemhttp.KindResponse, Status: status, Header: h, Body: body}
}

// bodyAllowed reports whether status may carry a body (RFC 9110 Sections
// 15.2, 15.3.5 and 15.4.5).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// legacyNotStoredHeader is how records completed before the ledger kept
// an outcome's kind mark an answer not kept; idemhttp reads it too.
const legacyNotStoredHeader = "Idemhttp-Not-Stored"

// replay answers with a stored outcome, and reports it replayed: its
// header lines as stored, the replay field, its status and its body. It
// reads the records of idemhttp, whose kinds it shares: a marker of an
// answer not kept is answered 410, and an outcome of another kind (a gRPC
// answer, ledger.Mutate's) is refused with 500, never sent.
func (cfg *config) replay(c fiber.Ctx, p *request, out ledger.Outcome) error {
	notStored, why := out.Kind == idemhttp.KindNotStored, reason(out.Body)
	if v, ok := out.Header[legacyNotStoredHeader]; ok && out.Kind == "" {
		notStored, why = true, reason(strings.Join(v, ""))
	}
	if notStored {
		cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: http.StatusGone})
		return cfg.refuseNotStored(c, out.Status, why)
	}
	if (out.Kind != idemhttp.KindResponse && out.Kind != "") || out.Status < 100 || out.Status > 999 {
		cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: http.StatusInternalServerError})
		return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusInternalServerError, Code: idemhttp.CodeStoredOutcome,
			Detail: "the answer stored for this idempotency key cannot be replayed over HTTP"})
	}
	resp := c.Response()
	for name, values := range out.Header {
		resp.Header.Del(name)
		for _, v := range values {
			resp.Header.Add(name, v)
		}
	}
	if _, typed := out.Header["Content-Type"]; !typed {
		// Stored without a type (net/http with sniffing turned off, or a
		// status without a body): so is its replay, not fasthttp's
		// default.
		resp.Header.Del("Content-Type")
		resp.Header.SetNoDefaultContentType(true)
	}
	resp.Header.Set(cfg.replayHeader, "true")
	cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: out.Status})
	resp.SetStatusCode(out.Status)
	// out is this request's own (the ledger decodes it for each
	// request), so the response may hold its body as it is.
	resp.SetBodyRaw(out.Body)
	return nil
}

// refuseNotStored answers a retry whose record is a marker: 410 Gone
// (idemhttp.CodeOutcomeNotStored) with the replay field, in idemhttp's
// words. status is the handler's, or 0.
func (cfg *config) refuseNotStored(c fiber.Ctx, status int, why reason) error {
	c.Set(cfg.replayHeader, "true")
	return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusGone, Code: idemhttp.CodeOutcomeNotStored,
		Detail: idemhttp.NotStoredDetail(status, string(why))})
}
