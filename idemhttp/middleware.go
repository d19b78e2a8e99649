package idemhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemledger/idemledger/internal/syntax"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// Middleware returns middleware that protects handlers with the ledger l
// in lease mode: a request with an idempotency key runs the handler once,
// and its retries get the stored answer; a duplicate that arrives while the
// first runs gets 409, a key reused for another request 422. The handler's
// effects may be anywhere; for effects all in the ledger's database,
// [TxHandler] gives exactly once. [Options] set the contract. The package
// doc's sections have the details: Answers (every answer), Storing (what
// is stored or released, and the commit point, [Commit]), Leases and the
// heartbeat, Timeouts (where [http.TimeoutHandler] goes), and Events (what
// [Options].Observer receives).
//
// Middleware panics when l is nil or opts.Scope is nil. The returned
// function and the handlers it makes are safe for concurrent use.
func Middleware[TTx any](l *ledger.Ledger[TTx], opts Options) func(http.Handler) http.Handler {
	if l == nil {
		panic("idemhttp: Middleware needs a ledger")
	}
	cfg := newConfig(opts, l.MaxKeyLength())
	return func(next http.Handler) http.Handler {
		return &middleware[TTx]{cfg: cfg, l: l, next: next}
	}
}

type middleware[TTx any] struct {
	cfg  *config
	l    *ledger.Ledger[TTx]
	next http.Handler
}

func (m *middleware[TTx]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := m.cfg.prepare(w, r, m.next)
	if !ok {
		return
	}
	if p == nil {
		m.next.ServeHTTP(w, r)
		return
	}
	cfg := m.cfg
	if underMiddleware(r, m.l, p.req) {
		// An outer Middleware of the same ledger holds this very key for
		// this request and will store the answer: claiming it again would
		// find that claim and answer 409 for ever.
		m.next.ServeHTTP(w, p.forHandler(r.Context()))
		return
	}

	d := lifecycle.Decide(r.Context(), m.l, p.req, lifecycle.Config{
		Wait: cfg.wait, FailOpen: cfg.policy == FailOpen, Emit: func(e ledger.Event) { cfg.emit(p, e) },
	})
	if d.Verdict != lifecycle.Claimed {
		if !cfg.answer(w, p, d, m.l.Lease()) {
			// Fail open: the handler runs without a claim.
			m.next.ServeHTTP(w, p.forHandler(r.Context()))
		}
		return
	}
	run := d.Run

	cw := newCapture(w, cfg.allow, cfg.maxBody)
	h := &held{l: m.l, req: p.req, fence: run.Fence(), run: run}
	hr := p.forHandler(context.WithValue(run.Context(r.Context()), ctxKey{}, h))
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit). Before the
		// commit point the key is given back so that a retry can run;
		// after it, a 500 is stored so that a retry cannot repeat the
		// effect. The panic goes on either way.
		if run.Committed() {
			failure := cfg.failure(hr)
			run.Complete(failure, ledger.ReasonPanic, failure.Status, nil)
			return
		}
		run.Release(ledger.ReasonPanic, lifecycle.NoStatus)
	}()
	m.next.ServeHTTP(cw, hr)
	finished = true
	run.Stop()
	cw.finish()

	out, why, keep := m.outcome(cw, run.Committed())
	if !keep {
		run.Release(eventReason(why), cw.status)
		return
	}
	run.Complete(out, eventReason(why), out.Status, nil)
}

// outcome decides what becomes of the handler's answer: the Outcome to
// store, or keep false to release the key. why is the reason the answer is
// not stored as the handler gave it (empty when it is).
func (m *middleware[TTx]) outcome(cw *capture, committed bool) (out ledger.Outcome, why reason, keep bool) {
	cfg := m.cfg
	switch {
	case cw.hijacked || cw.status < 200:
		why = reasonHijack
	case cw.overflow:
		why = reasonOversized
	case cw.flushed:
		why = reasonFlush
	case cw.trailers:
		why = reasonTrailers
	case !cfg.shouldStore(cw.status):
		why = reasonStatus
	default:
		return ledger.Outcome{Kind: KindResponse, Status: cw.status, Header: cw.outcomeHeader(), Body: cw.body}, "", true
	}
	switch {
	case why == reasonHijack || why == reasonOversized:
		// Nothing replayable was kept. By default an oversized answer
		// still keeps the key, as a marker: the operation completed, and
		// a second run would repeat it.
		if committed || why == reasonOversized && !cfg.releaseOversized {
			return notStoredMarker(cw.status, why), why, true
		}
	case committed:
		return ledger.Outcome{Kind: KindResponse, Status: cw.status, Header: cw.outcomeHeader(), Body: cw.body}, why, true
	}
	return ledger.Outcome{}, why, false
}

// prepared is a protected request, ready for the ledger: r is the request
// as it came (its body read: the handler's request is made by forHandler),
// body the bytes read, and req names the record. start is when the
// middleware began its work on it, route its route pattern (see route):
// the events report both.
type prepared struct {
	r     *http.Request
	body  []byte
	req   ledger.Request
	start time.Time
	route string
}

// forHandler returns the request the handler gets, with the context ctx:
// a copy of p.r whose body holds the same bytes that were fingerprinted.
// It is made only when a handler runs, since a replay needs no copy.
func (p *prepared) forHandler(ctx context.Context) *http.Request {
	r := p.r.WithContext(ctx)
	body := p.body
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}

// prepare reads the key, the scope and the body, and takes the fingerprint.
// It returns (nil, true) for a request to pass through unprotected, and
// (nil, false) when it has already written a refusal. next is the handler
// the request goes to, which may know its route (see route).
func (cfg *config) prepare(w http.ResponseWriter, r *http.Request, next http.Handler) (*prepared, bool) {
	if !cfg.methods[r.Method] {
		return nil, true
	}
	start := cfg.now()
	key, err := ParseKey(r.Header, cfg.keyRules)
	switch {
	case errors.Is(err, ErrMissingKey) && !cfg.required:
		return nil, true
	case errors.Is(err, ErrMissingKey):
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeKeyMissing,
			Detail: "this request needs an Idempotency-Key header", Err: err})
		return nil, false
	case err != nil:
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeKeyInvalid,
			Detail: "the Idempotency-Key header is not a valid key: " + keyProblem(err, cfg.keyRules.MaxLength), Err: err})
		return nil, false
	}
	scope, err := cfg.scope(r)
	if err != nil {
		ref := Refusal{Status: http.StatusBadRequest, Code: CodeScope,
			Detail: "the request's owner could not be determined", Err: err}
		var se *ScopeError
		if errors.As(err, &se) {
			if se.Status >= 400 && se.Status <= 599 {
				ref.Status = se.Status
			}
			if se.Detail != "" {
				ref.Detail = se.Detail
			}
			for name, values := range se.Header {
				w.Header()[http.CanonicalHeaderKey(name)] = append([]string(nil), values...)
			}
		}
		cfg.refuse(w, r, ref)
		return nil, false
	}
	if err := ledger.CheckScope(scope); err != nil {
		// Checked here, so that the answer names the scope and not the
		// client's key, as the ledger's refusal of the request would.
		// The reason, never the scope: CheckScope's texts do not quote it.
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeScope,
			Detail: "the request's owner is not a valid scope: " + strings.TrimPrefix(err.Error(), ledger.ErrInvalidRequest.Error()+": "), Err: err})
		return nil, false
	}
	body, err := cfg.readBody(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			cfg.refuse(w, r, Refusal{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
				Detail: "the request body is longer than " + strconv.FormatInt(cfg.maxBody, 10) + " bytes", Err: err})
		} else {
			cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeBadRequest,
				Detail: "the request body could not be read", Err: err})
		}
		return nil, false
	}
	p := &prepared{r: r, body: body, start: start}
	fr := r
	if cfg.customFingerprint {
		// A fingerprint of the service's own may read the body.
		fr = p.forHandler(r.Context())
	}
	fp, err := cfg.fingerprint(fr, body)
	if err != nil {
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeBadRequest,
			Detail: "the request could not be fingerprinted", Err: err})
		return nil, false
	}
	p.req = ledger.Request{Scope: scope, Key: key, Fingerprint: fp, Recover: cfg.recover}
	if cfg.observer != nil {
		p.route = route(r, next) // a route lookup only for the events
	}
	return p, true
}

// readBody reads the whole request body, refusing one longer than the
// limit with an *http.MaxBytesError. A declared length sizes the buffer at
// once, with a byte to spare for the end of the body.
func (cfg *config) readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > cfg.maxBody {
		return nil, &http.MaxBytesError{Limit: cfg.maxBody}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := cfg.maxBody + 1
	size := int64(512)
	if r.ContentLength >= 0 {
		size = r.ContentLength + 1
	}
	body := make([]byte, 0, min(size, limit))
	for {
		if int64(len(body)) >= limit {
			return nil, &http.MaxBytesError{Limit: cfg.maxBody}
		}
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)]
		}
		n, err := r.Body.Read(body[len(body):min(int64(cap(body)), limit)])
		body = body[:len(body)+n]
		if err == io.EOF {
			if int64(len(body)) >= limit {
				return nil, &http.MaxBytesError{Limit: cfg.maxBody}
			}
			return body, nil
		}
		if err != nil {
			return nil, fmt.Errorf("idemhttp: reading the request body: %w", err)
		}
	}
}

// keyProblem says what is wrong with a key without quoting it.
func keyProblem(err error, max int) string {
	if errors.Is(err, ErrKeyTooLong) {
		return "longer than " + strconv.Itoa(max) + " bytes"
	}
	var ce *syntax.CharError
	switch {
	case errors.As(err, &ce):
		return ce.Problem()
	case errors.Is(err, errKeyEmpty):
		return "it is empty"
	case errors.Is(err, errKeyLines):
		return "it was sent on more than one field line; send it once"
	case errors.Is(err, errKeyMalformed):
		return "it starts with a double quote but is not an RFC 9651 string (a closing quote missing, text after it, " +
			"an escape of anything but a quote or a backslash, or a character outside printable ASCII)"
	case errors.Is(err, errKeyUnquoted):
		return `this route takes keys only as RFC 9651 strings, in double quotes (KeyRules.Strict)`
	}
	return "it must be a non-empty string of printable ASCII, sent once"
}

// answer writes the answer to a decision that does not run the handler
// under a claim, and reports its event. It returns false, having written
// nothing, for lifecycle.Unprotected: the handler is to run without a
// claim (FailOpen while the store fails).
func (cfg *config) answer(w http.ResponseWriter, p *prepared, d lifecycle.Decision, lease time.Duration) bool {
	r := p.r
	e, ref := d.Event, d.Refusal
	switch {
	case d.Verdict == lifecycle.Replayed:
		cfg.replay(w, p, d.Outcome)
		return true
	case d.Verdict == lifecycle.Unprotected:
		cfg.emit(p, e)
		return false
	}
	switch ref.Why {
	case lifecycle.InFlight:
		secs := retryAfterSeconds(ref.RetryAfter, min(lease, cfg.retryAfter))
		e.Status = http.StatusConflict
		cfg.emit(p, e)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		cfg.refuse(w, r, Refusal{Status: http.StatusConflict, Code: CodeInFlight,
			Detail: "a request with this idempotency key is in flight", RetryAfter: time.Duration(secs) * time.Second, Err: ref.Err})
	case lifecycle.NotStored:
		// The first run passed its commit point and vanished: its effect
		// was made and its answer is lost, as for a marker.
		e.Status = http.StatusGone
		cfg.emit(p, e)
		why := reasonCommitted
		if ref.Reason == ledger.ReasonOversized {
			why = reasonOversized
		}
		cfg.refuseNotStored(w, r, ref.Status, why)
	case lifecycle.KeyReused:
		e.Status = http.StatusUnprocessableEntity
		cfg.emit(p, e)
		cfg.refuse(w, r, Refusal{Status: http.StatusUnprocessableEntity, Code: CodeKeyReused,
			Detail: cfg.reused, Err: ref.Err})
	case lifecycle.Invalid:
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeKeyInvalid,
			Detail: "the idempotency key is not accepted by the ledger", Err: ref.Err})
	case lifecycle.Busy:
		e.Status = http.StatusServiceUnavailable
		cfg.emit(p, e)
		cfg.refuseBusy(w, r, ref.Err)
	default:
		// Unavailable, or Canceled: the client left while the claim ran,
		// and nobody reads the answer.
		e.Status = http.StatusServiceUnavailable
		cfg.emit(p, e)
		cfg.refuseUnavailable(w, r, ref.Err)
	}
	return true
}

// refuseUnavailable answers 503 (CodeUnavailable): the store failed.
func (cfg *config) refuseUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	cfg.refuse(w, r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Detail: "the idempotency store is unavailable; retry later", Err: err})
}

// replay writes a stored outcome, and reports it replayed: its header
// lines exactly as stored, the replay marker, its status and its body. A
// marker of an answer that was not kept is answered with refuseNotStored.
// An outcome of another kind, or with no HTTP status, cannot be answered:
// it is refused with 500 (reported replayed with that status), since
// net/http would panic on the status. An outcome without a kind (completed
// before schema version 3, or by a caller of lease mode that named none) is
// read as a response, or as a marker when it carries the old marker header.
// out's header lists go into w's header as they are: out must not be used
// by anything else (the ledger decodes a fresh Outcome for each request).
func (cfg *config) replay(w http.ResponseWriter, p *prepared, out ledger.Outcome) {
	r := p.r
	notStored, why := out.Kind == KindNotStored, reason(out.Body)
	if v, ok := out.Header[legacyNotStoredHeader]; ok && out.Kind == "" {
		notStored, why = true, reason(strings.Join(v, ""))
	}
	if notStored {
		cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: http.StatusGone})
		cfg.refuseNotStored(w, r, out.Status, why)
		return
	}
	if (out.Kind != KindResponse && out.Kind != "") || out.Status < 100 || out.Status > 999 {
		cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: http.StatusInternalServerError})
		cfg.refuse(w, r, Refusal{Status: http.StatusInternalServerError, Code: CodeStoredOutcome,
			Detail: "the answer stored for this idempotency key cannot be replayed over HTTP"})
		return
	}
	h := w.Header()
	for name, values := range out.Header {
		// out is the caller's own (decoded from the record for this
		// request alone), so its lists become the answer's as they are.
		h[name] = values
	}
	if _, typed := out.Header["Content-Type"]; !typed && len(out.Body) > 0 {
		// The capture stores the type net/http sniffed; a body stored
		// without one had sniffing turned off, and so has its replay.
		h["Content-Type"] = nil
	}
	h.Set(cfg.replayHeader, "true")
	cfg.emit(p, ledger.Event{Kind: ledger.EventReplayed, Status: out.Status})
	w.WriteHeader(out.Status)
	if len(out.Body) > 0 {
		_, _ = w.Write(out.Body)
	}
}

// The details of a 422 for a key reused with another request. The record
// keeps only the fingerprint's digest, so nothing can say which part
// differed; the default fingerprint's parts are named, for a client to
// check its retry against.
const (
	reusedDefault = "this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's"
	reusedCustom  = "this idempotency key was used with another request: what the service compares differs from the first request's"
)
