package idemclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/idemledger/idemledger/internal/retry"
	"github.com/idemledger/idemledger/internal/syntax"
)

// Default limits of Transport.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxElapsed     = time.Minute
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
)

// DefaultRetryStatuses are the statuses Transport retries by default
// (besides 409 with Retry-After, always retried): 429 Too Many Requests and
// 503 Service Unavailable, which say in themselves that a retry may succeed.
var DefaultRetryStatuses = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}

// ErrAttemptTimeout is wrapped by the error of an attempt that
// [Transport.AttemptTimeout] cut short. Such an attempt is retried like a
// dropped connection; when it is the last, the *[TransportError] wraps it.
var ErrAttemptTimeout = errors.New("idemclient: attempt timed out")

// Transport is an [http.RoundTripper] that gives unsafe requests an
// idempotency key and retries them safely.
//
// A request whose method is in Methods and that has no Idempotency-Key gets
// a fresh key from [NewKey], written as an sf-string; a key the caller set is
// kept as it is. A request that carries a key, either way, is retried with
// the same key and the same body bytes (rewound through Request.GetBody) on:
//
//   - a transport error (connection refused or reset, EOF before the
//     response, an attempt cut by AttemptTimeout...), unless the request's
//     context is done;
//   - 409 Conflict with a Retry-After field: the first request with this key
//     is still in flight (a 409 without Retry-After, such as a key reused
//     with another payload, is final);
//   - a status in RetryStatuses (default 429 and 503),
//
// but never an answer that carries ReplayHeader: true, which is the key's
// stored outcome and would only come back again. It waits Retry-After when
// the answer has one (RFC 9110 Section 10.2.3), otherwise a capped
// exponential backoff with jitter. It never retries any other status (400
// and 422 included), never once the context is done, never a request whose
// body cannot be rewound (GetBody nil and a body other than nil or
// [http.NoBody]), never past MaxAttempts attempts, and never when the wait
// would end after MaxElapsed from the first attempt or after the context's
// deadline; then the last answer is returned as it is.
// Requests without a key pass through to Base untouched.
//
// # Keeping the key
//
// A caller whose request failed must not retry it under a new key: the
// first attempts may have made the effect. Every error of a keyed request
// is a *[TransportError] holding the key and the number of attempts
// ([errors.As]), wrapping the cause ([errors.Is] with [context.DeadlineExceeded]
// still holds); a response's key is in resp.Request.Header. Bound the
// request with its context's deadline and AttemptTimeout, not with
// [http.Client.Timeout]: when that timeout fires, net/http replaces the
// error with one of its own that keeps only the text, and the key is lost
// with it (OnAttempt still sees it).
//
// The zero Transport is ready to use, with the defaults below; so is a nil
// *Transport, which behaves as the zero one. A Transport is safe for
// concurrent use. Its fields must not change once it is in use. A field
// out of range (a negative count or duration, a method that is not a
// token or is a standard method in lower case, a ReplayHeader that is not
// a field name, a RetryStatuses entry outside 100 to 599) fails every
// RoundTrip with an error naming it, before anything is sent.
type Transport struct {
	// Base makes each attempt. Default [http.DefaultTransport].
	Base http.RoundTripper

	// Methods get a key when they lack one. Default POST and PATCH.
	Methods []string

	// MaxAttempts bounds the attempts per request, the first included.
	// Default [DefaultMaxAttempts] (5); 1 disables retries.
	MaxAttempts int

	// MaxElapsed bounds the time from the first attempt to the start of
	// the last. Default [DefaultMaxElapsed] (1 minute).
	MaxElapsed time.Duration

	// AttemptTimeout bounds each attempt from its start until the
	// response's header arrives; the body is then bounded by the request's
	// context only. An attempt cut short is retried with the same key, as
	// a dropped connection is, and its error wraps ErrAttemptTimeout.
	// Default: none (only the context's deadline).
	AttemptTimeout time.Duration

	// InitialBackoff is the wait before the second attempt when the server
	// gave no Retry-After; it doubles at each attempt up to MaxBackoff.
	// Each wait is drawn at random between half of it and all of it, so
	// that clients that failed together do not retry together. Default
	// [DefaultInitialBackoff] (200 ms).
	InitialBackoff time.Duration

	// MaxBackoff caps the backoff (not a server's Retry-After, which is
	// honoured as long as it fits MaxElapsed and the context's deadline).
	// Default [DefaultMaxBackoff] (10 s).
	MaxBackoff time.Duration

	// RetryStatuses are the statuses retried besides 409 with Retry-After.
	// Default [DefaultRetryStatuses] (429, 503). Add 502 and 504 when the
	// server behind the gateway is an idemhttp Middleware with a
	// ShouldStore that stores no 5xx (the default): the key is then
	// released or still in flight, so a retry either replays or runs the
	// handler once; with a ShouldStore that stores 502 or 504, a retry
	// just replays it. A non-nil empty slice retries no status.
	RetryStatuses []int

	// ReplayHeader is the field whose value "true" marks a replayed answer,
	// never retried. Default [DefaultReplayHeader] (Idempotent-Replayed), as
	// Middleware sends it.
	ReplayHeader string

	// NewKey makes the keys. Default NewKey (UUID v4 from crypto/rand). Its
	// error fails the request; no weaker key is made.
	NewKey func() (string, error)

	// OnAttempt, when set, is called after every attempt of a keyed
	// request, in order, on the goroutine of RoundTrip, before the wait
	// for the next one. It must not keep the Attempt's response body.
	OnAttempt func(Attempt)
}

// check returns the first field of t that is out of range, described.
func (t *Transport) check() error {
	if err := syntax.CheckMethods("Transport.Methods", t.Methods); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"MaxElapsed", t.MaxElapsed}, {"AttemptTimeout", t.AttemptTimeout},
		{"InitialBackoff", t.InitialBackoff}, {"MaxBackoff", t.MaxBackoff},
	} {
		if f.d < 0 {
			return fmt.Errorf("Transport.%s: %v is negative", f.name, f.d)
		}
	}
	if t.MaxAttempts < 0 {
		return fmt.Errorf("Transport.MaxAttempts: %d is negative", t.MaxAttempts)
	}
	for _, code := range t.RetryStatuses {
		if code < 100 || code > 599 {
			return fmt.Errorf("Transport.RetryStatuses: %d is not a status code (100 to 599)", code)
		}
	}
	return syntax.CheckFieldName("Transport.ReplayHeader", t.ReplayHeader)
}

// Attempt describes one attempt of a keyed request, for
// [Transport.OnAttempt].
type Attempt struct {
	// Key is the idempotency key sent, as the server reads it (without
	// the sf-string quotes).
	Key string
	// Number counts the attempts of the request, from 1.
	Number int
	// Status is the answer's status; 0 when Err is set.
	Status int
	// Err is the attempt's transport error; nil when it was answered.
	Err error
	// Retry reports whether another attempt follows, after Wait.
	Retry bool
	Wait  time.Duration
}

// TransportError is the error of a Transport request that carried an
// idempotency key: its attempts failed (the last one's error is Err), the
// context ended while it waited to retry, or its body could not be
// rewound. The operation may have run on the server: retry it with Key,
// never with a new key. Its text holds neither the key nor the body.
type TransportError struct {
	// Key is the idempotency key sent (without the sf-string quotes).
	Key string
	// Attempts is how many attempts were sent.
	Attempts int
	// Err is the cause.
	Err error
}

func (e *TransportError) Error() string {
	return "idemclient: transport: " + strconv.Itoa(e.Attempts) + " attempt(s): " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// RoundTrip implements [http.RoundTripper]. It does not modify req: the key is
// set on a clone. Like every RoundTripper it closes req.Body, also on error.
// A nil req is an error. The errors of a keyed request are
// *TransportError.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t == nil {
		t = &Transport{}
	}
	if req == nil {
		return nil, errors.New("idemclient: transport: nil request")
	}
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("idemclient: transport: %w", err)
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
	var key string
	if hasKey {
		key = sentKey(r.Header)
	} else {
		newKey := t.NewKey
		if newKey == nil {
			newKey = NewKey
		}
		k, err := newKey()
		if err == nil {
			err = SetKey(r.Header, k)
		}
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("idemclient: transport: %w", err)
		}
		key = k
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
	fail := func(n int, err error) error {
		return &TransportError{Key: key, Attempts: n, Err: err}
	}

	for attempt := 1; ; attempt++ {
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, fail(attempt-1, fmt.Errorf("rewinding the body: %w", err))
			}
			r.Body = body
		}
		resp, err := t.send(base, r)
		again, wait := false, time.Duration(0)
		if ctx.Err() == nil && rewindable && attempt < maxAttempts {
			wait, again = t.retryable(resp, err, attempt)
			wake := time.Now().Add(wait)
			if dl, ok := ctx.Deadline(); again && (wake.After(giveUp) || ok && wake.After(dl)) {
				again = false
			}
		}
		if t.OnAttempt != nil {
			a := Attempt{Key: key, Number: attempt, Err: err, Retry: again}
			if again {
				a.Wait = wait
			}
			if resp != nil {
				a.Status = resp.StatusCode
			}
			t.OnAttempt(a)
		}
		if !again {
			if err != nil {
				return resp, fail(attempt, err)
			}
			return resp, nil
		}
		if resp != nil {
			// Read a little of the body so that the connection can be
			// reused, then let it go.
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			resp.Body.Close()
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			return nil, fail(attempt, fmt.Errorf("waiting to retry: %w", err))
		}
	}
}

// send makes one attempt, bounded by AttemptTimeout until the response's
// header arrives.
func (t *Transport) send(base http.RoundTripper, r *http.Request) (*http.Response, error) {
	if t.AttemptTimeout <= 0 {
		return base.RoundTrip(r)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(t.AttemptTimeout, func() { cancel(ErrAttemptTimeout) })
	resp, err := base.RoundTrip(r.WithContext(ctx))
	if timer.Stop() && err == nil {
		// In time: the body is read under the request's context, and
		// closing it frees the attempt's.
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	timedOut := errors.Is(context.Cause(ctx), ErrAttemptTimeout)
	cancel(nil)
	switch {
	case err == nil && timedOut:
		// The header came as the timer fired: the body is cut already.
		resp.Body.Close()
		return nil, fmt.Errorf("%w after %v", ErrAttemptTimeout, t.AttemptTimeout)
	case err != nil && timedOut && errors.Is(err, ErrAttemptTimeout):
		// The base transport reports the cause itself: say it once.
		return nil, fmt.Errorf("%w after %v", ErrAttemptTimeout, t.AttemptTimeout)
	case err != nil && timedOut:
		return nil, fmt.Errorf("%w after %v: %w", ErrAttemptTimeout, t.AttemptTimeout, err)
	}
	return resp, err
}

// cancelBody ends an attempt's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// sentKey is the key a caller set, as the server reads it; a field that
// does not parse is returned as it is.
func sentKey(h http.Header) string {
	v := h.Values(HeaderName)
	if len(v) == 1 {
		raw := strings.Trim(v[0], " \t")
		if item, err := httpsfv.UnmarshalItem([]string{raw}); err == nil && strings.HasPrefix(raw, `"`) {
			if k, ok := item.Value.(string); ok {
				return k
			}
		}
		return raw
	}
	return strings.Join(v, ", ")
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
	replayHeader := t.ReplayHeader
	if replayHeader == "" {
		replayHeader = DefaultReplayHeader
	}
	if resp.Header.Get(replayHeader) == "true" {
		return 0, false
	}
	if resp.StatusCode == http.StatusConflict {
		d, ok := retryAfter(resp.Header, time.Now())
		return d, ok
	}
	statuses := t.RetryStatuses
	if statuses == nil {
		statuses = DefaultRetryStatuses
	}
	if !slices.Contains(statuses, resp.StatusCode) {
		return 0, false
	}
	if d, ok := retryAfter(resp.Header, time.Now()); ok {
		return d, true
	}
	return t.backoff(attempt), true
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
	return retry.Backoff(d, max, attempt)
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

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
