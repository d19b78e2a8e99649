package idemfiber

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// Options configure [New]. Only Scope is required; every other zero value
// means the default given in its comment, which is idemhttp's default for
// the same field ([idemhttp.Options]), so that a Fiber service and a
// net/http service configured alike answer alike. New panics, naming the
// field, when Scope is nil or a field is out of its range.
//
// Options are read once, when the handler is made; later changes to the
// value or its slices have no effect.
type Options struct {
	// Scope returns the owner of the request's keys (a user, tenant or API
	// key ID); keys of two scopes never meet. It runs on the request's
	// goroutine, before the handler, and may read what an earlier handler
	// stored with c.Locals. An error refuses the request with
	// idemhttp.CodeScope: 400, or the status, detail and header lines of an
	// *idemhttp.ScopeError in its chain (401 for a missing API key, say).
	// The returned string is copied, so it may alias Fiber's buffers
	// (c.Get). Required.
	Scope func(c fiber.Ctx) (string, error)

	// Required refuses a protected method without a key with 400
	// (idemhttp.CodeKeyMissing). By default such a request runs
	// unprotected.
	Required bool

	// Methods are the request methods protected, matched exactly.
	// Default: POST and PATCH. Others pass straight through.
	Methods []string

	// StrictKey accepts only the quoted sf-string form of the key
	// (idemhttp.KeyRules.Strict).
	StrictKey bool

	// MaxBodyBytes bounds both the request body fingerprinted (a longer
	// one is refused with 413, idemhttp.CodeBodyTooLarge) and the response
	// body stored (a longer one reaches the client but is kept as a
	// marker: retries get 410). Default idemhttp.DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// Recover lets a retry run the handler again after an earlier run
	// passed its commit point and vanished ([idemhttp.Options].Recover);
	// the handler reads the earlier commit time in ClaimFrom's
	// CommittedAt.
	Recover bool

	// ReleaseOversized releases the key, instead of keeping a marker, for
	// an answer longer than MaxBodyBytes, before the commit point.
	ReleaseOversized bool

	// ShouldStore reports whether an answer with this status is stored.
	// When it reports false the key is released, unless the handler passed
	// its commit point ([Commit]). Default idemhttp.StoreDefault: below 500
	// except 408, 409, 425, 429 and 499.
	ShouldStore func(status int) bool

	// ReplayHeaders adds names to idemhttp.DefaultReplayHeaders, the
	// response fields stored and replayed. Set-Cookie, the credentials,
	// the hop-by-hop fields and Content-Length are never stored.
	ReplayHeaders []string

	// FailurePolicy says what happens when the ledger cannot be reached:
	// idemhttp.FailClosed (503, the default) or idemhttp.FailOpen (the
	// handler runs unprotected; not for a ledger that is not migrated).
	FailurePolicy idemhttp.FailurePolicy

	// Fingerprint computes the request fingerprint from the request and
	// its raw body (as received, not decompressed). Default: hash.Request
	// over the method, the request target (path and query), the
	// Content-Type and the body: the digest idemhttp's default takes of
	// the same request. An error refuses the request with 400
	// (idemhttp.CodeBadRequest).
	Fingerprint func(c fiber.Ctx, body []byte) (hash.Digest, error)

	// Refuse writes the handler's own answers (the refusals: see
	// idemhttp.Refusal and its codes). It is called before anything was
	// written for the request, except the Retry-After and replay fields
	// that the refusal carries. Its error is returned to Fiber, whose
	// error handler then answers. Default [WriteProblem]: an RFC 9457
	// problem document, byte for byte idemhttp.WriteProblem's.
	Refuse func(c fiber.Ctx, ref idemhttp.Refusal) error

	// ReplayHeader is the field set to "true" on every replayed answer.
	// Default idemhttp.DefaultReplayHeader (Idempotent-Replayed).
	ReplayHeader string

	// Observer receives the events of protected requests, as idemhttp's
	// do, with Route "METHOD /path" when New is a route's handler
	// (app.Post("/orders/:id", idem, h)) and empty when it is app.Use'd.
	// Default nil: no events.
	Observer ledger.Observer

	// InFlightRetryAfter caps the Retry-After of a 409 in flight, and is
	// the Retry-After of a 503 busy. Default
	// idemhttp.DefaultInFlightRetryAfter (1 s).
	InFlightRetryAfter time.Duration

	// Wait is how long a request whose key is in flight waits for the
	// first request's answer before it gets 409 ([lifecycle.Config].Wait).
	// Zero (the default) answers 409 at once.
	Wait time.Duration

	// Now is the clock of the events' Duration. Default time.Now.
	Now func() time.Time
}

// config is Options with the defaults filled in.
type config struct {
	scope            func(fiber.Ctx) (string, error)
	required         bool
	methods          map[string]string // the method, to its own copy
	keyRules         idemhttp.KeyRules
	maxBody          int64
	recover          bool
	releaseOversized bool
	shouldStore      func(int) bool
	allow            map[string]bool
	failOpen         bool
	fingerprint      func(fiber.Ctx, []byte) (hash.Digest, error)
	reused           string
	refuse           func(fiber.Ctx, idemhttp.Refusal) error
	replayHeader     string
	retryAfter       time.Duration
	wait             time.Duration
	observer         ledger.Observer
	now              func() time.Time
}

// The details of a 422, as idemhttp words them.
const (
	reusedDefault = "this idempotency key was used with another request: its method, path and query, Content-Type or body (compared in canonical form) differ from the first request's"
	reusedCustom  = "this idempotency key was used with another request: what the service compares differs from the first request's"
)

func newConfig(o Options, maxKey int) *config {
	if err := o.check(); err != nil {
		panic("idemfiber: " + err.Error())
	}
	c := &config{
		scope:            o.Scope,
		required:         o.Required,
		methods:          make(map[string]string),
		keyRules:         idemhttp.KeyRules{MaxLength: maxKey, Strict: o.StrictKey},
		maxBody:          o.MaxBodyBytes,
		recover:          o.Recover,
		releaseOversized: o.ReleaseOversized,
		shouldStore:      o.ShouldStore,
		allow:            make(map[string]bool),
		failOpen:         o.FailurePolicy == idemhttp.FailOpen,
		fingerprint:      o.Fingerprint,
		reused:           reusedCustom,
		refuse:           o.Refuse,
		replayHeader:     http.CanonicalHeaderKey(o.ReplayHeader),
		retryAfter:       o.InFlightRetryAfter,
		wait:             max(o.Wait, 0),
		observer:         o.Observer,
		now:              o.Now,
	}
	methods := o.Methods
	if len(methods) == 0 {
		methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, m := range methods {
		c.methods[m] = strings.Clone(m)
	}
	if c.keyRules.MaxLength <= 0 {
		c.keyRules.MaxLength = ledger.DefaultMaxKeyLength
	}
	if c.maxBody <= 0 {
		c.maxBody = idemhttp.DefaultMaxBodyBytes
	}
	if c.shouldStore == nil {
		c.shouldStore = idemhttp.StoreDefault
	}
	for _, list := range [][]string{idemhttp.DefaultReplayHeaders, o.ReplayHeaders} {
		for _, name := range list {
			name = http.CanonicalHeaderKey(name)
			if !idemhttp.NeverStored(name) {
				c.allow[name] = true
			}
		}
	}
	if c.fingerprint == nil {
		c.fingerprint, c.reused = fingerprint, reusedDefault
	}
	if c.refuse == nil {
		c.refuse = WriteProblem
	}
	if c.replayHeader == "" {
		c.replayHeader = idemhttp.DefaultReplayHeader
	}
	if c.retryAfter <= 0 {
		c.retryAfter = idemhttp.DefaultInFlightRetryAfter
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// check returns the first field of o that is out of range, described.
func (o Options) check() error {
	if o.Scope == nil {
		return errors.New("Options.Scope is required")
	}
	for _, m := range o.Methods {
		if !token(m) {
			return fmt.Errorf("Options.Methods: %q is not a method (a token, RFC 9110 Section 9.1)", m)
		}
		if up := strings.ToUpper(m); up != m && standardMethod[up] {
			return fmt.Errorf("Options.Methods: %q is %s in lower case, which no client sends (methods are case-sensitive)", m, up)
		}
	}
	if o.MaxBodyBytes < 0 {
		return fmt.Errorf("Options.MaxBodyBytes: %d is negative", o.MaxBodyBytes)
	}
	if o.FailurePolicy != idemhttp.FailClosed && o.FailurePolicy != idemhttp.FailOpen {
		return fmt.Errorf("Options.FailurePolicy: %d is neither FailClosed nor FailOpen", o.FailurePolicy)
	}
	for _, name := range o.ReplayHeaders {
		if !token(name) {
			return fmt.Errorf("Options.ReplayHeaders: %q is not a field name (RFC 9110 Section 5.1)", name)
		}
	}
	if o.ReplayHeader != "" && !token(o.ReplayHeader) {
		return fmt.Errorf("Options.ReplayHeader: %q is not a field name (RFC 9110 Section 5.1)", o.ReplayHeader)
	}
	if o.InFlightRetryAfter < 0 {
		return fmt.Errorf("Options.InFlightRetryAfter: %v is negative", o.InFlightRetryAfter)
	}
	return nil
}

var standardMethod = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

// token reports whether s is an RFC 9110 token (Section 5.6.2).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0:
		default:
			return false
		}
	}
	return true
}
