package idemfiber

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
)

// New returns a Fiber handler that protects the handlers after it with
// the ledger l in lease mode, with idemhttp.Middleware's contract: a
// request with an idempotency key runs the rest of the chain once, and its
// retries get the stored answer with the replay field; a duplicate that
// arrives while the first runs gets 409 with Retry-After, a key reused for
// another request 422, a bad key 400, and a store that fails 503. The
// package doc says what is stored, what is released, and where New goes
// in the chain.
//
// l is usually a *ledger.Ledger; when it has a MaxKeyLength method, its
// value bounds the keys accepted. New panics when l is nil or opts.Scope
// is nil. The handler is safe for concurrent use.
func New(l lifecycle.Ledger, opts Options) fiber.Handler {
	if l == nil {
		panic("idemfiber: New needs a ledger")
	}
	maxKey := 0
	if m, ok := l.(interface{ MaxKeyLength() int }); ok {
		maxKey = m.MaxKeyLength()
	}
	cfg := newConfig(opts, maxKey)
	return func(c fiber.Ctx) error { return cfg.serve(c, l) }
}

// request is a protected request, ready for the ledger. Its fields are
// the request's own copies: fasthttp reuses its buffers once the handler
// returns, and the events may be reported from the heartbeat's goroutine.
type request struct {
	req    ledger.Request
	method string
	route  string
	start  time.Time
	ctx    context.Context // the request's context, for the observer
}

// serve is the life of one request: the four steps of package lifecycle.
func (cfg *config) serve(c fiber.Ctx, l lifecycle.Ledger) error {
	method, protected := cfg.methods[c.Method()]
	if !protected || held(c.Context()) != nil {
		// Another method, or an outer idemfiber handler already holds this
		// request's key: claiming it again would find that claim and
		// answer 409 for ever.
		return c.Next()
	}
	// Step 1: the ledger.Request (scope, key, fingerprint).
	p, err := cfg.prepare(c, method)
	if p == nil {
		return err // a refusal written, or nil for a request to pass through
	}
	// Step 2: decide.
	d := lifecycle.Decide(p.ctx, l, p.req, lifecycle.Config{
		Wait: cfg.wait, FailOpen: cfg.failOpen, Emit: func(e ledger.Event) { cfg.emit(p, e) },
	})
	// Step 3: the verdicts that do not run the handler under a claim.
	switch d.Verdict {
	case lifecycle.Replayed:
		return cfg.replay(c, p, d.Outcome)
	case lifecycle.Refused:
		return cfg.refused(c, p, d, l.Lease())
	case lifecycle.Unprotected:
		cfg.emit(p, d.Event)
		return c.Next()
	}
	// Step 4: run the handler under the claim, then end the run.
	return cfg.run(c, p, d.Run)
}

// prepare reads the key, the scope and the body, and takes the
// fingerprint. It returns nil and a nil error for a request to pass
// through unprotected, and nil with the refusal's error when it has
// answered by itself.
func (cfg *config) prepare(c fiber.Ctx, method string) (*request, error) {
	start := cfg.now()
	key, err := idemhttp.ParseKey(keyHeader(c), cfg.keyRules)
	switch {
	case errors.Is(err, idemhttp.ErrMissingKey) && !cfg.required:
		return nil, c.Next()
	case errors.Is(err, idemhttp.ErrMissingKey):
		return nil, cfg.refuse(c, idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeKeyMissing,
			Detail: "this request needs an Idempotency-Key header", Err: err})
	case err != nil:
		return nil, cfg.refuse(c, idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeKeyInvalid,
			Detail: "the Idempotency-Key header is not a valid key: " + keyProblem(err, cfg.keyRules.MaxLength), Err: err})
	}
	scope, err := cfg.scope(c)
	if err != nil {
		ref := idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeScope,
			Detail: "the request's owner could not be determined", Err: err}
		var se *idemhttp.ScopeError
		if errors.As(err, &se) {
			if se.Status >= 400 && se.Status <= 599 {
				ref.Status = se.Status
			}
			if se.Detail != "" {
				ref.Detail = se.Detail
			}
			for name, values := range se.Header {
				c.Response().Header.Del(name)
				for _, v := range values {
					c.Response().Header.Add(name, v)
				}
			}
		}
		return nil, cfg.refuse(c, ref)
	}
	scope = strings.Clone(scope) // it may alias a buffer of fasthttp's (c.Get)
	if err := ledger.CheckScope(scope); err != nil {
		return nil, cfg.refuse(c, idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeScope,
			Detail: "the request's owner is not a valid scope: " + strings.TrimPrefix(err.Error(), ledger.ErrInvalidRequest.Error()+": "), Err: err})
	}
	// The raw body, as received: idemhttp fingerprints the bytes on the
	// wire too, never a decompressed form (c.Body()).
	body := c.BodyRaw()
	if int64(len(body)) > cfg.maxBody {
		return nil, cfg.refuse(c, idemhttp.Refusal{Status: http.StatusRequestEntityTooLarge, Code: idemhttp.CodeBodyTooLarge,
			Detail: "the request body is longer than " + strconv.FormatInt(cfg.maxBody, 10) + " bytes",
			Err:    &http.MaxBytesError{Limit: cfg.maxBody}})
	}
	fp, err := cfg.fingerprint(c, body)
	if err != nil {
		return nil, cfg.refuse(c, idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeBadRequest,
			Detail: "the request could not be fingerprinted", Err: err})
	}
	p := &request{
		req:    ledger.Request{Scope: scope, Key: key, Fingerprint: fp, Recover: cfg.recover},
		method: method, start: start, ctx: c.Context(),
	}
	if r := c.Route(); r != nil && r.Method != "USE" {
		// A route's own handler: its template, never the raw path. Under
		// app.Use the endpoint is not known yet.
		p.route = r.Method + " " + r.Path
	}
	return p, nil
}

// keyHeader returns the request's Idempotency-Key field lines as an
// http.Header, for idemhttp.ParseKey: every line, so that a key sent twice
// is refused as idemhttp refuses it.
func keyHeader(c fiber.Ctx) http.Header {
	lines := c.Request().Header.PeekAll(idemhttp.HeaderName)
	if len(lines) == 0 {
		return nil
	}
	values := make([]string, len(lines))
	for i, line := range lines {
		values[i] = string(line)
	}
	return http.Header{idemhttp.HeaderName: values}
}

// fingerprint is the default Options.Fingerprint: idemhttp's, over the
// same parts as net/http sees them. The target is the request target
// parsed as net/http parses it (url.ParseRequestURI) and written back
// with its path and query (URL.RequestURI), so that an absolute-form
// target fingerprints as its path, and a Fiber service and a net/http
// service that share a ledger agree on every request.
func fingerprint(c fiber.Ctx, body []byte) (hash.Digest, error) {
	raw := string(c.Request().Header.RequestURI())
	target := raw
	if u, err := url.ParseRequestURI(raw); err == nil {
		target = u.RequestURI()
	}
	return hash.Request(c.Method(), target, string(c.Request().Header.ContentType()), body), nil
}

// keyProblem says what is wrong with a key without quoting it. idemhttp
// has a finer one, unexported; the codes and statuses are the same.
func keyProblem(err error, max int) string {
	if errors.Is(err, idemhttp.ErrKeyTooLong) {
		return "longer than " + strconv.Itoa(max) + " bytes"
	}
	return "it must be a non-empty string of printable ASCII, bare or as an RFC 9651 string in double quotes, sent once"
}

// refused answers a Refused decision, and reports its event.
func (cfg *config) refused(c fiber.Ctx, p *request, d lifecycle.Decision, lease time.Duration) error {
	e, ref := d.Event, d.Refusal
	switch ref.Why {
	case lifecycle.InFlight:
		secs := idemhttp.RetryAfterSeconds(ref.RetryAfter, min(lease, cfg.retryAfter))
		e.Status = http.StatusConflict
		cfg.emit(p, e)
		c.Set("Retry-After", strconv.FormatInt(secs, 10))
		return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusConflict, Code: idemhttp.CodeInFlight,
			Detail: "a request with this idempotency key is in flight", RetryAfter: time.Duration(secs) * time.Second, Err: ref.Err})
	case lifecycle.NotStored:
		e.Status = http.StatusGone
		cfg.emit(p, e)
		why := reasonCommitted
		if ref.Reason == ledger.ReasonOversized {
			// A marker stored because the store refused the answer's size.
			why = reasonOversized
		}
		return cfg.refuseNotStored(c, ref.Status, why)
	case lifecycle.KeyReused:
		e.Status = http.StatusUnprocessableEntity
		cfg.emit(p, e)
		return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusUnprocessableEntity, Code: idemhttp.CodeKeyReused,
			Detail: cfg.reused, Err: ref.Err})
	case lifecycle.Invalid:
		// Made before any record: no event.
		return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusBadRequest, Code: idemhttp.CodeKeyInvalid,
			Detail: "the idempotency key is not accepted by the ledger", Err: ref.Err})
	case lifecycle.Busy:
		e.Status = http.StatusServiceUnavailable
		cfg.emit(p, e)
		// Retry-After is the configured cap, as idemhttp answers it.
		secs := idemhttp.RetryAfterSeconds(cfg.retryAfter, cfg.retryAfter)
		c.Set("Retry-After", strconv.FormatInt(secs, 10))
		return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusServiceUnavailable, Code: idemhttp.CodeBusy,
			Detail: "the idempotency store is busy; retry later", RetryAfter: time.Duration(secs) * time.Second, Err: ref.Err})
	}
	// Unavailable, or Canceled: the client left while the claim ran, and
	// nobody reads the answer.
	e.Status = http.StatusServiceUnavailable
	cfg.emit(p, e)
	return cfg.refuse(c, idemhttp.Refusal{Status: http.StatusServiceUnavailable, Code: idemhttp.CodeUnavailable,
		Detail: "the idempotency store is unavailable; retry later", Err: ref.Err})
}

// emit reports e, an event of the protected request p, to the observer,
// with the method, the route and the time since the work began, and the
// key and the scope blotted out of its error. It may run on the
// heartbeat's goroutine, so it reads p alone, never the fiber.Ctx.
func (cfg *config) emit(p *request, e ledger.Event) {
	if cfg.observer == nil || e.Kind == 0 {
		return
	}
	e.Method, e.Route = p.method, p.route
	e.Duration = cfg.now().Sub(p.start)
	if e.Err != nil {
		e.Err = lifecycle.Redact(e.Err, p.req.Key, p.req.Scope)
	}
	cfg.observer.Observe(p.ctx, e)
}
