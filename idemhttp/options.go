package idemhttp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/idemclient"
	"github.com/idemledger/idemledger/internal/syntax"
	"github.com/idemledger/idemledger/internal/token"
	"github.com/idemledger/idemledger/ledger"
)

// DefaultMaxBodyBytes is the default of [Options.MaxBodyBytes]: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// DefaultReplayHeader is the default of [Options.ReplayHeader], the field the
// middleware adds, with the value "true", to every replayed response.
const DefaultReplayHeader = idemclient.DefaultReplayHeader

// DefaultInFlightRetryAfter is the default of [Options.InFlightRetryAfter].
const DefaultInFlightRetryAfter = time.Second

// DefaultReplayHeaders are the response header fields that are stored and
// replayed by default. [Options.ReplayHeaders] adds to them.
//
// Content-Encoding is among them because the stored body is the bytes the
// handler wrote: a handler (or a compressing layer inside the middleware,
// or connect-go, which compresses with gzip by default) that wrote a
// compressed body needs the field for its replay to be readable. Such a
// body is replayed compressed to whoever retries, whatever its
// Accept-Encoding; put a compressing layer outside the middleware to
// negotiate per request.
var DefaultReplayHeaders = []string{
	"Content-Type", "Content-Encoding", "Content-Language", "Location", "ETag",
	"Last-Modified", "Cache-Control", "Link",
}

// neverStored are fields no option can add to the replay allowlist:
// Set-Cookie would hand one client's session to whoever replays the key;
// credentials (Authorization, Proxy-Authorization, Cookie: request fields,
// but a handler may echo one) would sit in the database in clear; and the
// hop-by-hop fields (RFC 9110 Section 7.6.1) and Content-Length describe one
// connection or one encoding, not the outcome.
var neverStored = map[string]bool{
	"Set-Cookie": true, "Authorization": true, "Proxy-Authorization": true, "Cookie": true,
	"Connection": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Transfer-Encoding": true, "Upgrade": true,
	"Trailer": true, "Te": true, "Content-Length": true,
}

// NeverStored reports whether the header field name (in canonical form,
// as [http.CanonicalHeaderKey] makes it) is one that no option adds to
// the replayed fields: credentials, cookies and the fields of one
// connection. A transport of another framework uses it to keep the same
// list as this package.
func NeverStored(name string) bool { return neverStored[name] }

// FailurePolicy says what the middleware does when the ledger cannot be
// reached.
type FailurePolicy int

const (
	// FailClosed refuses the request with 503 ([CodeUnavailable]). The
	// handler does not run. This is the default.
	FailClosed FailurePolicy = iota
	// FailOpen runs the handler without protection: a retry may run it
	// again. Each such request is reported as a store_unavailable event
	// with Status 0 (see [Options.Observer]). A ledger whose table is
	// missing ([ledger.ErrNotMigrated]) is refused as with [FailClosed]: that
	// is a deployment error, not an outage.
	FailOpen
)

// Options configure Middleware and TxHandler. Only Scope is required; every
// other zero value means the default given in its comment. Middleware and
// [TxHandler] panic, naming the field, when Scope is nil or a field is out
// of the range its comment gives, so that a configuration error shows when
// the server starts rather than as requests that run unprotected.
//
// Options are read once, when the middleware is made; later changes to the
// value or its slices have no effect.
type Options struct {
	// Scope returns the owner of the request's keys (a user, tenant or API
	// key ID); keys of two scopes never meet. It is called only for a
	// request that the middleware protects. An error refuses the request
	// with [CodeScope]: 400, or the status of a *[ScopeError] in the error's
	// chain (401 for a missing API key, say); a scope the ledger refuses
	// ([ledger.CheckScope]) is 400 too. Required: Middleware panics when it
	// is nil.
	Scope func(*http.Request) (string, error)

	// Required refuses a protected method without a key with 400
	// ([CodeKeyMissing]). By default such a request runs unprotected.
	Required bool

	// Methods are the request methods the middleware protects, matched
	// exactly (methods are case-sensitive, RFC 9110 Section 9.1). Default:
	// POST and PATCH. Other methods pass straight through, key or no key.
	// Each must be a token, and not a standard method in lower case
	// ("post"), which no client sends for it.
	Methods []string

	// StrictKey accepts only the quoted sf-string form of the key and
	// refuses a bare token with 400 (see [KeyRules.Strict]).
	StrictKey bool

	// MaxBodyBytes bounds, in bytes, both the request body read to take the
	// fingerprint (a longer one is refused with 413, [CodeBodyTooLarge]) and
	// the response body stored. A longer response is still sent to the
	// client in full, but cannot be stored: the ledger keeps a marker
	// instead, so the handler does not run again for the key, and retries
	// get 410 ([CodeOutcomeNotStored]); it is reported as a stored event
	// with Reason oversized. Default [DefaultMaxBodyBytes] (1 MiB); negative
	// panics.
	MaxBodyBytes int64

	// Recover lets a retry run the handler again after an earlier run
	// passed its commit point (Commit) and vanished without storing an
	// answer (its process died), once that run's lease has run out. The
	// handler then finds the earlier commit time in [ClaimFrom]'s
	// [Claim.CommittedAt], and must look its effect up rather than make it
	// again: Stripe's recovery point. Without Recover such retries get 410
	// ([CodeOutcomeNotStored]). That 410 is not stored: the record stays as
	// the vanished run left it, so a server that turns Recover on later
	// runs the next retry in recovery. Middleware only.
	Recover bool

	// ReleaseOversized releases the key, instead of keeping a marker, when
	// a response is longer than MaxBodyBytes: a retry then runs the handler
	// again. Only for handlers that are safe to run twice; past the commit
	// point (Commit) the marker is kept all the same. It does not apply to
	// [TxHandler], which rolls such a response back ([CodeResponseTooLarge]).
	ReleaseOversized bool

	// ShouldStore reports whether a response with this final status is
	// stored and replayed. When it reports false the key is released, so a
	// retry runs the handler again, unless the handler passed its commit
	// point (Commit): then the answer is stored whatever its status.
	// Default StoreDefault.
	ShouldStore func(status int) bool

	// ReplayHeaders adds names to [DefaultReplayHeaders], the allowlist of
	// response fields that are stored and replayed. Set-Cookie,
	// Authorization, Proxy-Authorization, Cookie, the hop-by-hop fields and
	// Content-Length are never stored. Each must be a field name (a token,
	// RFC 9110 Section 5.1).
	ReplayHeaders []string

	// FailurePolicy says what happens when the ledger cannot be reached.
	// Default [FailClosed] (503).
	FailurePolicy FailurePolicy

	// Fingerprint computes the request fingerprint from the request and its
	// body (already read, at most MaxBodyBytes). Default: [hash.Request] over
	// the method, the path with query, the Content-Type and the body. An
	// error refuses the request with 400 ([CodeBadRequest]).
	Fingerprint func(r *http.Request, body []byte) (hash.Digest, error)

	// Refuse writes the middleware's own answers (see Refusal and the Code
	// constants). Default [WriteProblem] (RFC 9457 problem+json).
	Refuse RefuseFunc

	// ReplayHeader is the field set to "true" on every replayed response,
	// a field name (a token). Default [DefaultReplayHeader]
	// (Idempotent-Replayed).
	ReplayHeader string

	// Observer receives the events of protected requests (claimed,
	// stored, replayed, in flight, key reused, released, lease lost, store
	// busy, store unavailable), with the method, the route pattern, the
	// answer's status and the time since the middleware began its work;
	// the package doc's Events section says which, when, and with what.
	// Events never hold the key or the scope. [ledger.LogObserver] logs
	// them with slog; [ledger.Observers] feeds several observers (a logger
	// and metrics). Default nil: no events.
	Observer ledger.Observer

	// InFlightRetryAfter caps the Retry-After sent with a 409 in flight,
	// and is the Retry-After of a 503 busy ([CodeBusy]). The field says when
	// a takeover becomes possible (the rest of the first request's lease)
	// only in the worst case: most handlers finish long before their lease
	// runs out, and the lease is extended while they run, so a retry after
	// the full remainder (up to the whole lease) would wait far longer than
	// needed, and a client would give up first. The field is the lease
	// remainder capped at this value, in whole seconds, at least 1 (RFC
	// 9110 Section 10.2.3). Default [DefaultInFlightRetryAfter] (1 s);
	// negative panics.
	//
	// A client's budget counts attempts as well as time: Transport's
	// defaults (MaxAttempts 5) give up after about 4 s against
	// Retry-After: 1, with the 409 as its answer, however long MaxElapsed
	// is. For handlers slower than that, raise Transport.MaxAttempts (or
	// this cap) so that the client outlasts the handler.
	InFlightRetryAfter time.Duration

	// Wait is how long a request whose key is in flight (its first request
	// still runs) waits for the first request's answer before it gets 409:
	// it is answered the moment that answer is stored (a replay), or runs
	// itself when the first request releases the key. Zero or negative
	// (the default) answers 409 at once.
	//
	// It is off by default because a waiting request holds its connection
	// and the client's attempt: a client whose per-attempt timeout is
	// shorter than the wait (Transport's AttemptTimeout, a load
	// balancer's idle timeout) would time out where a 409 with
	// Retry-After would have told it to come back. Set it below the
	// shortest such timeout in front of the service; then a duplicate
	// from a client at its default retry settings ends with the first
	// answer. Waiting polls the record, every few milliseconds at first,
	// then every 50 to 100 ms (see BENCHMARKS.md, "Waiting duplicates").
	Wait time.Duration

	// Now is the clock of the events' Duration. Default [time.Now]. The
	// ledger keeps its own clock ([ledger.Options.Now]) for leases and
	// expiry.
	Now func() time.Time
}

// StatusClientClosedRequest is 499, nginx's status for a request whose
// client closed the connection before the answer; it is in no RFC. A
// handler that writes it after its request's context ended has no outcome
// to give, so no ShouldStore of this package stores it.
const StatusClientClosedRequest = 499

// StoreDefault is the default ShouldStore: every status below 500 except the
// transient ones a retry may well change: 408 Request Timeout, 409 Conflict,
// 425 Too Early, 429 Too Many Requests, and 499 ([StatusClientClosedRequest]).
func StoreDefault(status int) bool {
	if transient(status) {
		return false
	}
	return status < 500
}

// StoreServerErrors stores as Stripe does: every status, 5xx included,
// except the transient 408, 409, 425, 429 and 499, and except 503, which
// says in itself that a retry may succeed.
func StoreServerErrors(status int) bool {
	return !transient(status) && status != http.StatusServiceUnavailable
}

// transient reports the statuses below 500 that say the request may well
// succeed if sent again, and so are never stored.
func transient(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly,
		http.StatusTooManyRequests, StatusClientClosedRequest:
		return true
	}
	return false
}

// StoreSuccess stores only 2xx answers.
func StoreSuccess(status int) bool {
	return status >= 200 && status <= 299
}

// config is Options with the defaults filled in and the lists made into
// sets.
type config struct {
	scope            func(*http.Request) (string, error)
	required         bool
	methods          map[string]bool
	keyRules         KeyRules
	maxBody          int64
	shouldStore      func(int) bool
	releaseOversized bool
	recover          bool
	allow            map[string]bool
	policy           FailurePolicy
	fingerprint      func(*http.Request, []byte) (hash.Digest, error)
	// customFingerprint: fingerprint is the service's own, which may read
	// the request's body, and so gets a request whose body holds the bytes.
	customFingerprint bool
	reused            string // the detail of a 422 for a reused key
	refuse            RefuseFunc
	replayHeader      string
	retryAfter        time.Duration
	wait              time.Duration
	observer          ledger.Observer
	now               func() time.Time
}

func newConfig(o Options, maxKey int) *config {
	if err := o.check(); err != nil {
		panic("idemhttp: " + err.Error())
	}
	c := &config{
		scope:             o.Scope,
		required:          o.Required,
		methods:           make(map[string]bool),
		keyRules:          KeyRules{MaxLength: maxKey, Strict: o.StrictKey},
		maxBody:           o.MaxBodyBytes,
		shouldStore:       o.ShouldStore,
		releaseOversized:  o.ReleaseOversized,
		recover:           o.Recover,
		allow:             make(map[string]bool),
		policy:            o.FailurePolicy,
		fingerprint:       o.Fingerprint,
		customFingerprint: o.Fingerprint != nil,
		refuse:            o.Refuse,
		replayHeader:      http.CanonicalHeaderKey(o.ReplayHeader),
		retryAfter:        o.InFlightRetryAfter,
		wait:              o.Wait,
		observer:          o.Observer,
		now:               o.Now,
	}
	methods := o.Methods
	if len(methods) == 0 {
		methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, m := range methods {
		c.methods[m] = true
	}
	if c.keyRules.MaxLength <= 0 {
		c.keyRules.MaxLength = ledger.DefaultMaxKeyLength
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	if c.shouldStore == nil {
		c.shouldStore = StoreDefault
	}
	for _, list := range [][]string{DefaultReplayHeaders, o.ReplayHeaders} {
		for _, name := range list {
			name = http.CanonicalHeaderKey(name)
			if !neverStored[name] {
				c.allow[name] = true
			}
		}
	}
	c.reused = reusedCustom
	if c.fingerprint == nil {
		c.fingerprint, c.reused = fingerprint, reusedDefault
	}
	if c.refuse == nil {
		c.refuse = WriteProblem
	}
	if c.replayHeader == "" {
		c.replayHeader = DefaultReplayHeader
	}
	if c.retryAfter <= 0 {
		c.retryAfter = DefaultInFlightRetryAfter
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.wait = max(c.wait, 0)
	return c
}

// check returns the first field of o that is out of range, described.
func (o Options) check() error {
	if o.Scope == nil {
		return errors.New("Options.Scope is required")
	}
	if err := syntax.CheckMethods("Options.Methods", o.Methods); err != nil {
		return err
	}
	if o.MaxBodyBytes < 0 {
		return fmt.Errorf("Options.MaxBodyBytes: %d is negative", o.MaxBodyBytes)
	}
	if o.FailurePolicy != FailClosed && o.FailurePolicy != FailOpen {
		return fmt.Errorf("Options.FailurePolicy: %d is neither FailClosed nor FailOpen", o.FailurePolicy)
	}
	for _, name := range o.ReplayHeaders {
		if !token.Valid(name) {
			return fmt.Errorf("Options.ReplayHeaders: %q is not a field name (RFC 9110 Section 5.1)", name)
		}
	}
	if err := syntax.CheckFieldName("Options.ReplayHeader", o.ReplayHeader); err != nil {
		return err
	}
	if o.InFlightRetryAfter < 0 {
		return fmt.Errorf("Options.InFlightRetryAfter: %v is negative", o.InFlightRetryAfter)
	}
	return nil
}
