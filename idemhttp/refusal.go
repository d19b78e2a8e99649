package idemhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Code names why the middleware refused a request. It is stable: callers
// map it to their own error vocabulary in [Options.Refuse].
type Code string

// The refusal codes, with the status the middleware gives each by default.
const (
	// CodeKeyMissing: the key is required ([Options.Required]) and absent. 400.
	CodeKeyMissing Code = "key-missing"
	// CodeKeyInvalid: the key is empty, malformed, not printable ASCII, too
	// long, or sent twice. 400. [Refusal.Err] tells which (errors.Is with
	// [ErrKeyTooLong] for the length).
	CodeKeyInvalid Code = "key-invalid"
	// CodeScope: [Options.Scope] returned an error, or a scope the ledger
	// refuses (ledger.CheckScope: over ledger.MaxScopeLength bytes, not
	// UTF-8, or with a control character). 400, or the status of a
	// *[ScopeError] that Scope returned (401, say).
	CodeScope Code = "scope"
	// CodeBodyTooLarge: the request body is longer than
	// [Options.MaxBodyBytes], so it cannot be fingerprinted. 413.
	CodeBodyTooLarge Code = "body-too-large"
	// CodeBadRequest: the request body could not be read, or the
	// fingerprint function failed. 400.
	CodeBadRequest Code = "bad-request"
	// CodeInFlight: a request with the same key is still running. 409, with
	// [Refusal.RetryAfter] set.
	CodeInFlight Code = "in-flight"
	// CodeKeyReused: the key was used before with another method, target or
	// body. 422.
	CodeKeyReused Code = "key-reused"
	// CodeUnavailable: the ledger could not be reached and
	// [Options.FailurePolicy] is FailClosed. 503.
	CodeUnavailable Code = "unavailable"
	// CodeStoredOutcome: the key's stored outcome is no HTTP answer (its
	// status is outside 100 to 999, as ledger.Mutate stores 0): the key
	// was used, with the same fingerprint, by an operation that is not an
	// HTTP handler. The server's fault, logged as an error. 500.
	CodeStoredOutcome Code = "stored-outcome"
	// CodeBusy: the store is up but its lock was not free in time: on
	// SQLite, another connection (of any process sharing the file) held the
	// write lock past busy_timeout, as a long [TxHandler] run does
	// (ledger.ErrBusy). 503, with Retry-After ([Options.InFlightRetryAfter],
	// in whole seconds) and [Refusal.RetryAfter] set; logged at Warn, not as
	// an outage. [FailurePolicy] does not apply.
	CodeBusy Code = "busy"
	// CodeOutcomeNotStored: the request with this key completed, but its
	// answer is not kept, so the ledger keeps a marker instead and the
	// handler never runs again for the key. It is answered in exactly
	// three cases: the answer was longer than [Options.MaxBodyBytes], or
	// than the store can keep ([ledger.ErrOutcomeTooLarge]); it was sent
	// over a hijacked connection after the commit point; or the run passed
	// its commit point ([Commit]) and its lease ran out with no answer
	// stored, and that run has been fenced out (its record taken over and
	// the marker stored: see [lifecycle.Decide]), so it can no longer
	// store an answer. While that run may still store one, a retry gets
	// 409 instead. A handler that records steps is resumed instead (see
	// docs/steps.md). The 410 is final: every later request with the key
	// gets it until the record expires.
	// 410 Gone: the answer is permanently unavailable, which is what the
	// client must learn. Clients never retry a 410 (Transport neither), so
	// it cannot loop, and it differs from 409 in flight (which asks for a
	// retry), from 422 key reused (a client bug) and from any 5xx (which
	// invites a retry, and to a caller that gives up, a new key and a
	// second run). The replay header is set on it.
	CodeOutcomeNotStored Code = "outcome-not-stored"
	// CodeHandlerPanicked: the handler panicked after its commit point
	// (Commit). Its answer is lost, but its effect was made, so this 500 is
	// stored and replayed in its place. 500.
	CodeHandlerPanicked Code = "handler-panicked"
	// CodeResponseTooLarge: a [TxHandler] handler answered with a body longer
	// than [Options.MaxBodyBytes], which could not be stored, so its writes
	// were rolled back. 500.
	CodeResponseTooLarge Code = "response-too-large"
)

// Refusal describes an answer that the middleware gives on its own, without
// running the handler. No refusal ever creates or completes a ledger record.
type Refusal struct {
	// Status is the HTTP status the middleware suggests (see the Code
	// constants). A custom [Options.Refuse] may answer another one.
	Status int
	// Code says why, in a stable vocabulary.
	Code Code
	// Detail is a sentence for people. It never holds the key or the
	// scope.
	Detail string
	// RetryAfter is how long until the running request's lease ends, for
	// [CodeInFlight], or until the store is worth trying again, for [CodeBusy];
	// zero otherwise. The middleware has already written it to the
	// Retry-After field, in whole seconds, before Refuse is called.
	RetryAfter time.Duration
	// Err is the underlying error, when there is one (a [ParseKey] error, the
	// Scope error, a ledger error). It is for logs and branching, not for
	// the client: it may say more than the client should read.
	Err error
}

// RefuseFunc writes a refusal to w. It is called at most once per request,
// before anything was written to w. It must write a complete response.
type RefuseFunc func(w http.ResponseWriter, r *http.Request, ref Refusal)

// ProblemContentType is the media type of an RFC 9457 problem document
// (Section 6.1).
const ProblemContentType = "application/problem+json"

// problem is an RFC 9457 problem document (Section 3.1) with one extension
// member, "code", carrying the Code.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   Code   `json:"code"`
}

// WriteProblem is the default RefuseFunc. It answers ref.Status with an RFC
// 9457 problem document (application/problem+json) whose "type" is
// "about:blank" (Section 4.2.1), "title" the status's reason phrase,
// "detail" ref.Detail, plus an extension member "code" holding ref.Code.
// For example:
//
//	{"type":"about:blank","title":"Conflict","status":409,
//	 "detail":"a request with this idempotency key is in flight","code":"in-flight"}
func WriteProblem(w http.ResponseWriter, r *http.Request, ref Refusal) {
	p := problem{
		Type:   "about:blank",
		Title:  http.StatusText(ref.Status),
		Status: ref.Status,
		Detail: ref.Detail,
		Code:   ref.Code,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// A struct of strings and an int always encodes.
	_ = enc.Encode(p)
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(ref.Status)
	_, _ = w.Write(buf.Bytes())
}

// RetryAfterSeconds converts a wait d to the value of a Retry-After field
// (RFC 9110 Section 10.2.3), in whole seconds: d rounded up, at least 1 (an
// answer of 0 invites a busy loop) and at most limit rounded up (the lease,
// which bounds any wait, or a configured cap). A transport of another
// framework uses it to answer as this package does.
func RetryAfterSeconds(d, limit time.Duration) int64 { return retryAfterSeconds(d, limit) }

func retryAfterSeconds(d, lease time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	max := int64((lease + time.Second - 1) / time.Second)
	if max < 1 {
		max = 1
	}
	if s > max {
		s = max
	}
	if s < 1 {
		s = 1
	}
	return s
}
