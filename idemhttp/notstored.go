package idemhttp

import (
	"net/http"
	"strconv"

	"github.com/idemledger/idemledger/ledger"
)

// The kinds of the outcomes idemhttp stores ([ledger.Outcome.Kind]).
// Middleware and [TxHandler] write and read both, so a key may move between
// them; a record of any other kind under the same scope and key (Mutate's,
// gRPC's) is refused with [CodeStoredOutcome], never replayed.
const (
	// KindResponse is an HTTP response: Status, Header and Body as the
	// handler sent them, less the fields that are never stored.
	KindResponse = "http"
	// KindNotStored is an operation that completed but whose answer was
	// not kept (too long, sent over a hijacked connection, or lost after
	// its commit point): Status is the handler's when it had one, and Body
	// the reason, one of the event reasons "oversized", "hijack", "panic"
	// or "committed". Retries get [CodeOutcomeNotStored] instead of running
	// the handler again.
	KindNotStored = "http.not_stored"
)

// legacyNotStoredHeader is how records completed before schema version 3,
// which have no kind, mark an answer that was not kept: the header's value
// is the reason. It is read from records without a kind only.
const legacyNotStoredHeader = "Idemhttp-Not-Stored"

// notStoredMarker is the Outcome kept for a completed operation whose
// answer could not be kept.
func notStoredMarker(status int, why reason) ledger.Outcome {
	return ledger.Outcome{Kind: KindNotStored, Status: status, Body: []byte(why)}
}

// refuseNotStored answers a retry whose record is a marker: 410 Gone
// (CodeOutcomeNotStored), with the replay header, since it is the stored
// outcome of the key. See CodeOutcomeNotStored for why 410. status is the
// handler's, or 0.
func (cfg *config) refuseNotStored(w http.ResponseWriter, r *http.Request, status int, why reason) {
	w.Header().Set(cfg.replayHeader, "true")
	cfg.refuse(w, r, Refusal{Status: http.StatusGone, Code: CodeOutcomeNotStored, Detail: NotStoredDetail(status, string(why))})
}

// NotStoredDetail is the detail of the 410 problem document
// ([CodeOutcomeNotStored]) that answers a retry of an operation whose
// answer is not kept. status is the first run's, or 0; why is the reason
// kept in the record's marker: "oversized" (the answer was too large to
// keep), "committed" (the run passed its commit point and vanished), or
// any other (the answer could not be kept). A transport of another
// framework uses it to answer in this package's words.
func NotStoredDetail(status int, why string) string {
	if why == string(reasonCommitted) {
		return "the request with this idempotency key made its effect, then stopped before its answer was kept, so it cannot be sent again"
	}
	detail := "the request with this idempotency key completed"
	if status >= 100 && status <= 999 {
		detail += " with status " + strconv.Itoa(status)
	}
	if why == string(reasonOversized) {
		return detail + ", but its answer was too large to keep, so it cannot be sent again"
	}
	return detail + ", but its answer could not be kept, so it cannot be sent again"
}

// failure is the Outcome stored for a handler that panicked after its
// commit point: a 500 written by Options.Refuse (CodeHandlerPanicked),
// captured as any answer is, so that retries get it.
func (cfg *config) failure(r *http.Request) ledger.Outcome {
	buf := newBuffer(http.Header{}, cfg.maxBody)
	cfg.refuse(buf, r, Refusal{Status: http.StatusInternalServerError, Code: CodeHandlerPanicked,
		Detail: "the request with this idempotency key made its effect, then failed; its answer is lost"})
	buf.finish()
	if buf.tooLarge() {
		return notStoredMarker(http.StatusInternalServerError, reasonPanic)
	}
	return ledger.Outcome{Kind: KindResponse, Status: buf.status, Header: buf.outcomeHeader(cfg.allow), Body: buf.body}
}
