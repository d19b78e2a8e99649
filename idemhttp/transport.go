package idemhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Default limits of Transport.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxElapsed     = time.Minute
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
)

// Transport is an http.RoundTripper that gives unsafe requests an
// idempotency key and retries them safely.
//
// A request whose method is in Methods and that has no Idempotency-Key gets
// a fresh key from NewKey, written as an sf-string; a key the caller set is
// kept as it is. A request that carries a key, either way, is retried with
// the same key and the same body bytes (rewound through Request.GetBody) on:
//
//   - a transport error (connection refused or reset, EOF before the
//     response...), unless the request's context is done;
//   - 409 Conflict with a Retry-After field: the first request with this key
//     is still in flight (a 409 without Retry-After, such as a key reused
//     with another payload, is final);
//   - 429 Too Many Requests and 503 Service Unavailable.
//
// It waits Retry-After when the answer has one (RFC 9110 Section 10.2.3),
// otherwise a capped exponential backoff with jitter. It never retries any
// other status (400 and 422 included), never once the context is done, never
// a request whose body cannot be rewound (GetBody nil and a body other than
// nil or http.NoBody), never past MaxAttempts attempts, and never when the
// wait would end after MaxElapsed from the first attempt or after the
// context's deadline; then the last answer is returned as it is.
// Requests without a key pass through to Base untouched.
//
// The zero Transport is ready to use, with the defaults below; so is a nil
// *Transport, which behaves as the zero one. A Transport is safe for
// concurrent use. Its fields must not change once it is in use.
type Transport struct {
	// Base makes each attempt. Default http.DefaultTransport.
	Base http.RoundTripper

	// Methods get a key when they lack one. Default POST and PATCH.
	Methods []string

	// MaxAttempts bounds the attempts per request, the first included.
	// Default DefaultMaxAttempts (5); 1 disables retries.
	MaxAttempts int

	// MaxElapsed bounds the time from the first attempt to the start of
	// the last. Default DefaultMaxElapsed (1 minute).
	MaxElapsed time.Duration

	// InitialBackoff is the wait before the second attempt when the server
	// gave no Retry-After; it doubles at each attempt up to MaxBackoff.
	// Each wait is drawn at random between half of it and all of it, so
	// that clients that failed together do not retry together. Default
	// DefaultInitialBackoff (200 ms).
	InitialBackoff time.Duration

	// MaxBackoff caps the backoff (not a server's Retry-After, which is
	// honoured as long as it fits MaxElapsed and the context's deadline).
	// Default DefaultMaxBackoff (10 s).
	MaxBackoff time.Duration

	// NewKey makes the keys. Default NewKey (UUID v4 from crypto/rand). Its
	// error fails the request; no weaker key is made.
	NewKey func() (string, error)
}

// RoundTrip implements http.RoundTripper. It does not modify req: the key is
// set on a clone. Like every RoundTripper it closes req.Body, also on error.
// A nil req is an error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t == nil {
		t = &Transport{}
	}
	if req == nil {
		return nil, errors.New("idemhttp: transport: nil request")
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	hasKey := len(req.Header.Values(HeaderName)) > 0
	if !hasKey && !t.protects(req.Method) {
		return base.RoundTrip(req)
	}

	r := req.Clone(req.Context())
	if r.Header == nil {
		r.Header = make(http.Header) // room for the key
	}
	if !hasKey {
		newKey := t.NewKey
		if newKey == nil {
			newKey = NewKey
		}
		key, err := newKey()
		if err == nil {
			err = SetKey(r.Header, key)
		}
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("idemhttp: transport: %w", err)
		}
	}

	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	maxAttempts := t.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	maxElapsed := t.MaxElapsed
	if maxElapsed <= 0 {
		maxElapsed = DefaultMaxElapsed
	}
	giveUp := time.Now().Add(maxElapsed)
	ctx := req.Context()

	for attempt := 1; ; attempt++ {
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("idemhttp: transport: rewinding the body: %w", err)
			}
			r.Body = body
		}
		resp, err := base.RoundTrip(r)
		if ctx.Err() != nil || !rewindable || attempt >= maxAttempts {
			return resp, err
		}
		wait, again := t.retryable(resp, err, attempt)
		if !again {
			return resp, err
		}
		wake := time.Now().Add(wait)
		if wake.After(giveUp) {
			return resp, err
		}
		if dl, ok := ctx.Deadline(); ok && wake.After(dl) {
			return resp, err
		}
		if resp != nil {
			// Read a little of the body so that the connection can be
			// reused, then let it go.
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			resp.Body.Close()
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("idemhttp: transport: waiting to retry: %w", err)
		}
	}
}

func (t *Transport) protects(method string) bool {
	if len(t.Methods) == 0 {
		return method == http.MethodPost || method == http.MethodPatch
	}
	for _, m := range t.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// retryable says whether an attempt's answer is worth another attempt, and
// after how long.
func (t *Transport) retryable(resp *http.Response, err error, attempt int) (time.Duration, bool) {
	if err != nil {
		return t.backoff(attempt), true
	}
	switch resp.StatusCode {
	case http.StatusConflict:
		d, ok := retryAfter(resp.Header, time.Now())
		return d, ok
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if d, ok := retryAfter(resp.Header, time.Now()); ok {
			return d, true
		}
		return t.backoff(attempt), true
	}
	return 0, false
}

// backoff is the wait after the given attempt: InitialBackoff doubled per
// attempt, capped at MaxBackoff, then drawn in [d/2, d].
func (t *Transport) backoff(attempt int) time.Duration {
	d := t.InitialBackoff
	if d <= 0 {
		d = DefaultInitialBackoff
	}
	max := t.MaxBackoff
	if max <= 0 {
		max = DefaultMaxBackoff
	}
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter reads a Retry-After field (RFC 9110 Section 10.2.3): delay
// seconds or an HTTP-date. A date in the past means no wait. ok is false
// when the field is absent or unreadable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
