package idemhttp

import (
	"net/http"
	"strconv"

	"github.com/idemledger/idemledger/ledger"
)

// notStoredHeader marks a stored Outcome that holds no answer, only the
// fact that the operation completed: its value is the reason (see
// reason), its Status the handler's. It is in neverStored, so no handler
// can store it by accident, and it is never replayed as a header.
const notStoredHeader = "Idemhttp-Not-Stored"

// notStoredMarker is the Outcome kept for a completed operation whose
// answer could not be kept (too long, or sent over a hijacked connection):
// retries get CodeOutcomeNotStored instead of running the handler again.
func notStoredMarker(status int, why reason) ledger.Outcome {
	return ledger.Outcome{Status: status, Header: http.Header{notStoredHeader: {string(why)}}}
}

func isNotStoredMarker(out ledger.Outcome) bool {
	_, ok := out.Header[notStoredHeader]
	return ok
}

// refuseNotStored answers a retry whose record is a marker: 410 Gone
// (CodeOutcomeNotStored), with the replay header, since it is the stored
// outcome of the key. See CodeOutcomeNotStored for why 410.
func (cfg *config) refuseNotStored(w http.ResponseWriter, r *http.Request, out ledger.Outcome) {
	why := reason(out.Header.Get(notStoredHeader))
	detail := "the request with this idempotency key completed"
	if out.Status >= 100 && out.Status <= 999 {
		detail += " with status " + strconv.Itoa(out.Status)
	}
	switch why {
	case reasonOversized:
		detail += ", but its answer was too large to keep, so it cannot be sent again"
	case reasonCommitted:
		detail = "the request with this idempotency key made its effect, then stopped before its answer was kept, so it cannot be sent again"
	default:
		detail += ", but its answer could not be kept, so it cannot be sent again"
	}
	w.Header().Set(cfg.replayHeader, "true")
	cfg.refuse(w, r, Refusal{Status: http.StatusGone, Code: CodeOutcomeNotStored, Detail: detail})
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
	return ledger.Outcome{Status: buf.status, Header: buf.outcomeHeader(cfg.allow), Body: buf.body}
}
