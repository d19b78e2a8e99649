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

	"github.com/idemledger/idemledger/ledger"
)

// Middleware protects handlers with the ledger l on the database db, in the
// ledger's lease mode (see ledger.Ledger.Claim): it claims the key in its own short
// transaction, runs the handler, then completes or releases the claim. The
// handler's side effects may be anywhere (another service, a payment API);
// for handlers whose effects are all in db, TxHandler gives exactly once.
//
// For a request whose method is in opts.Methods and that carries a key, the
// answers are:
//
//	malformed, empty or over-long key, two key lines   400 (CodeKeyInvalid)
//	no key, opts.Required                              400 (CodeKeyMissing)
//	Scope fails, or returns what the ledger refuses    400, or a *ScopeError's status (CodeScope)
//	body longer than MaxBodyBytes                      413 (CodeBodyTooLarge)
//	first request with the key                         the handler's answer, stored if ShouldStore
//	same key while the first runs                      409 with Retry-After (CodeInFlight), at once
//	same key and fingerprint, completed                the stored answer, plus ReplayHeader: true
//	  ... stored by ledger.Mutate, not an HTTP answer  500 (CodeStoredOutcome)
//	  ... an answer too large to keep (a marker)       410 (CodeOutcomeNotStored), plus ReplayHeader: true
//	same key, other method, target or body             422 (CodeKeyReused)
//	store busy (SQLite's lock held past busy_timeout)  503 with Retry-After (CodeBusy)
//	ledger unreachable                                 503 (CodeUnavailable), or the handler unprotected with FailOpen
//
// A request without a key and without Required, or with another method,
// goes to the handler unprotected. The middleware's refusals never create or
// complete a record.
//
// The handler's answer is sent to the client as it is written, and a copy
// is kept. The claim is released, so a retry runs the handler again, when
// the handler panics (the panic goes on), when ShouldStore rejects the
// status, and when the handler flushes, hijacks the connection or
// announces trailers; each release is logged at Warn with its reason. An
// answer longer than MaxBodyBytes reaches the client whole but is not
// stored: a marker keeps the key (retries get 410, CodeOutcomeNotStored),
// unless ReleaseOversized is set. A handler whose effect cannot be undone
// marks its commit point with Commit once the effect is made: from then on
// none of these endings releases the key, and retries replay what was
// stored (a panic as a 500 problem document). Completion and release use a context that the
// client's disconnect does not cancel (context.WithoutCancel), bounded by
// the ledger's lease, so a client that hangs up does not lose its outcome.
// While the handler runs, its lease is extended every third of the lease
// (ledger.Ledger.Extend), so a handler slower than the lease keeps its key.
// A failed extension (a busy or unreachable store) is logged at Warn and
// tried again after a ninth of the lease; only ledger.ErrLeaseLost ends the
// extensions, logged at Error. A lease guards the key only while the store
// can be reached to extend it: when extensions fail for longer than the
// lease, a retry that reaches the store first takes the key over and runs
// the handler again (the first run's completion then fails with
// ledger.ErrLeaseLost, logged). Choose ledger.Config.Lease longer than the
// store outages the service must ride out.
//
// The claims run on the ledger's own database (its driver's pool), the
// longest key accepted is the ledger's Config.MaxKeyLength.
//
// The handler reads the key, the scope and the fence from its request's
// context with ClaimFrom.
//
// Put http.TimeoutHandler outside the middleware, never inside it:
// http.TimeoutHandler(Middleware(...)(h), d). Outside, the client gets the
// timeout's 503 while the handler goes on under its claim, and retries get
// 409 in flight and then the stored answer. Inside, the middleware sees the
// timeout's 503 as the handler's answer and releases the key while the
// handler still runs, so a retry runs it a second time; a commit point
// cannot help, as the release comes first.
//
// Middleware panics when l is nil, or when opts.Scope is nil. The
// returned function and the handlers it makes are safe for concurrent use.
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
	p, ok := m.cfg.prepare(w, r)
	if !ok {
		return
	}
	if p == nil {
		m.next.ServeHTTP(w, r)
		return
	}
	cfg := m.cfg
	if underMiddleware(p.r, m.l, p.req) {
		// An outer Middleware of the same ledger holds this very key for
		// this request and will store the answer: claiming it again would
		// find that claim and answer 409 for ever.
		m.next.ServeHTTP(w, p.r)
		return
	}

	claim, err := m.l.Claim(r.Context(), p.req)
	if err != nil {
		if cfg.refuseLedger(w, p, err, m.l.Lease()) {
			return
		}
		// Fail open: the handler runs without a claim.
		m.next.ServeHTTP(w, p.r)
		return
	}
	if claim.Replayed() {
		cfg.replay(w, p.r, claim.Replay.Outcome)
		return
	}

	start := cfg.now()
	cw := newCapture(w, cfg.allow, cfg.maxBody)
	h := &held{l: m.l, req: p.req, fence: claim.Fence, lease: true}
	hb := m.startHeartbeat(p, claim)
	finished := false
	defer func() {
		if finished {
			return
		}
		// The handler panicked (or called runtime.Goexit). Before the
		// commit point the key is given back so that a retry can run;
		// after it, a 500 is stored so that a retry cannot repeat the
		// effect. The panic goes on either way.
		hb.stop()
		if h.committed.Load() {
			m.complete(p, claim, cfg.failure(p.r), reasonPanic, start)
			return
		}
		m.release(p, claim, reasonPanic)
	}()
	m.next.ServeHTTP(cw, withHeld(p.r, h))
	finished = true
	hb.stop()
	cw.finish()

	out, why, keep := m.outcome(p.r, cw, h.committed.Load())
	if !keep {
		m.release(p, claim, why)
		return
	}
	m.complete(p, claim, out, why, start)
}

// outcome decides what becomes of the handler's answer: the Outcome to
// store, or keep false to release the key. why is the reason the answer is
// not stored as the handler gave it (empty when it is).
func (m *middleware[TTx]) outcome(r *http.Request, cw *capture, committed bool) (out ledger.Outcome, why reason, keep bool) {
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
		return ledger.Outcome{Status: cw.status, Header: cw.outcomeHeader(), Body: cw.body}, "", true
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
		return ledger.Outcome{Status: cw.status, Header: cw.outcomeHeader(), Body: cw.body}, why, true
	}
	return ledger.Outcome{}, why, false
}

// complete stores out; why, when not empty, says why out is not the
// handler's answer as given, and is logged at Warn.
func (m *middleware[TTx]) complete(p *prepared, c *ledger.Claim, out ledger.Outcome, why reason, start time.Time) {
	cfg := m.cfg
	switch {
	case why == "":
	case isNotStoredMarker(out):
		cfg.emit(p.r, p, event{kind: evNotStored, reason: why, status: out.Status, limit: cfg.maxBody})
	default:
		cfg.emit(p.r, p, event{kind: evKept, reason: why, status: out.Status})
	}
	ctx, cancel := m.detached(p.r)
	defer cancel()
	if err := m.l.Complete(ctx, c, out); err != nil {
		cfg.emit(p.r, p, event{kind: evCompleteFailed, reason: why, status: out.Status, took: cfg.now().Sub(start), err: err})
	}
}

// detached returns a context that outlives the client's disconnect but not
// the lease: past it, another request may own the key, and the ledger would
// refuse the write anyway.
func (m *middleware[TTx]) detached(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), max(m.l.Lease(), time.Second))
}

func (m *middleware[TTx]) release(p *prepared, c *ledger.Claim, why reason) {
	m.cfg.emit(p.r, p, event{kind: evReleased, reason: why})
	ctx, cancel := m.detached(p.r)
	defer cancel()
	if err := m.l.Release(ctx, c); err != nil {
		m.cfg.emit(p.r, p, event{kind: evReleaseFailed, reason: why, err: err})
	}
}

// prepared is a protected request, ready for the ledger: r has its body
// replaced by the bytes read, and req names the record.
type prepared struct {
	r   *http.Request
	req ledger.Request
}

// redact returns err's text with the key and the scope blotted out. The
// ledger promises not to quote them, but a database driver's message makes
// no such promise, and logs must never carry them. Only whole words are
// replaced (an occurrence bounded by characters that cannot belong to a
// key), so that a scope such as "s" or "42" does not garble the message.
func (p *prepared) redact(err error) string {
	msg := err.Error()
	for _, secret := range []string{p.req.Key, p.req.Scope} {
		msg = redactWord(msg, secret)
	}
	return msg
}

// redactWord replaces each occurrence of word in s that is not part of a
// longer run of letters, digits or '-', '_', '.'.
func redactWord(s, word string) string {
	if word == "" {
		return s
	}
	var b strings.Builder
	from := 0 // s[:from] is written
	for at := 0; ; {
		i := strings.Index(s[at:], word)
		if i < 0 {
			b.WriteString(s[from:])
			return b.String()
		}
		i += at
		end := i + len(word)
		if (i == 0 || !wordByte(s[i-1])) && (end == len(s) || !wordByte(s[end])) {
			b.WriteString(s[from:i])
			b.WriteString("[redacted]")
			from, at = end, end
			continue
		}
		at = i + 1
	}
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// prepare reads the key, the scope and the body, and takes the fingerprint.
// It returns (nil, true) for a request to pass through unprotected, and
// (nil, false) when it has already written a refusal.
func (cfg *config) prepare(w http.ResponseWriter, r *http.Request) (*prepared, bool) {
	if !cfg.methods[r.Method] {
		return nil, true
	}
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
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeScope,
			Detail: "the request's owner is not a valid scope", Err: err})
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
	// The handler reads the same bytes that were fingerprinted.
	r2 := r.WithContext(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r2.ContentLength = int64(len(body))
	fp, err := cfg.fingerprint(r2, body)
	if err != nil {
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeBadRequest,
			Detail: "the request could not be fingerprinted", Err: err})
		return nil, false
	}
	return &prepared{r: r2, req: ledger.Request{Scope: scope, Key: key, Fingerprint: fp}}, true
}

// readBody reads the whole request body, refusing one longer than the
// limit with an *http.MaxBytesError.
func (cfg *config) readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > cfg.maxBody {
		return nil, &http.MaxBytesError{Limit: cfg.maxBody}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, cfg.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("idemhttp: reading the request body: %w", err)
	}
	if int64(len(body)) > cfg.maxBody {
		return nil, &http.MaxBytesError{Limit: cfg.maxBody}
	}
	return body, nil
}

// keyProblem says what is wrong with a key without quoting it.
func keyProblem(err error, max int) string {
	if errors.Is(err, ErrKeyTooLong) {
		return "longer than " + strconv.Itoa(max) + " bytes"
	}
	return "it must be a non-empty string of printable ASCII, sent once"
}

// refuseLedger answers a Claim error. It reports false when the request is
// to run unprotected instead (FailOpen and the ledger unreachable).
func (cfg *config) refuseLedger(w http.ResponseWriter, p *prepared, err error, lease time.Duration) bool {
	r := p.r
	var inFlight *ledger.InFlightError
	switch {
	case errors.As(err, &inFlight):
		secs := retryAfterSeconds(inFlight.RetryAfter, min(lease, cfg.retryAfter))
		cfg.emit(r, p, event{kind: evInFlight, retryAfter: secs})
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		cfg.refuse(w, r, Refusal{Status: http.StatusConflict, Code: CodeInFlight,
			Detail: "a request with this idempotency key is in flight", RetryAfter: time.Duration(secs) * time.Second, Err: err})
		return true
	case errors.Is(err, ledger.ErrKeyReused):
		cfg.emit(r, p, event{kind: evKeyReused})
		cfg.refuse(w, r, Refusal{Status: http.StatusUnprocessableEntity, Code: CodeKeyReused,
			Detail: "this idempotency key was used with another request", Err: err})
		return true
	case errors.Is(err, ledger.ErrInvalidRequest):
		cfg.refuse(w, r, Refusal{Status: http.StatusBadRequest, Code: CodeKeyInvalid,
			Detail: "the idempotency key is not accepted by the ledger", Err: err})
		return true
	}
	if r.Context().Err() != nil {
		// The client left while the claim ran: nothing is unavailable,
		// and nobody reads the answer.
		cfg.refuse(w, r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Detail: "the idempotency store is unavailable; retry later", Err: err})
		return true
	}
	if busy(err) {
		cfg.refuseBusy(w, r, p, err)
		return true
	}
	cfg.emit(r, p, event{kind: evStoreUnavailable, failOpen: cfg.policy == FailOpen, err: err})
	if cfg.policy == FailOpen {
		return false
	}
	cfg.refuse(w, r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Detail: "the idempotency store is unavailable; retry later", Err: err})
	return true
}

// replay writes a stored outcome: its header lines exactly as stored, the
// replay marker, its status and its body. An outcome with no HTTP status
// (ledger.Mutate stores 0) cannot be answered: it is refused, since
// net/http would panic on the status. A marker of an answer that was not
// kept is answered with refuseNotStored.
func (cfg *config) replay(w http.ResponseWriter, r *http.Request, out ledger.Outcome) {
	if isNotStoredMarker(out) {
		cfg.refuseNotStored(w, r, out)
		return
	}
	if out.Status < 100 || out.Status > 999 {
		cfg.emit(r, nil, event{kind: evStoredNotHTTP, status: out.Status})
		cfg.refuse(w, r, Refusal{Status: http.StatusInternalServerError, Code: CodeStoredOutcome,
			Detail: "the answer stored for this idempotency key cannot be replayed over HTTP"})
		return
	}
	h := w.Header()
	for name, values := range out.Header {
		h[name] = append([]string(nil), values...)
	}
	if _, typed := out.Header["Content-Type"]; !typed && len(out.Body) > 0 {
		// The capture stores the type net/http sniffed; a body stored
		// without one had sniffing turned off, and so has its replay.
		h["Content-Type"] = nil
	}
	h.Set(cfg.replayHeader, "true")
	cfg.emit(r, nil, event{kind: evReplayed, status: out.Status})
	w.WriteHeader(out.Status)
	if len(out.Body) > 0 {
		_, _ = w.Write(out.Body)
	}
}
