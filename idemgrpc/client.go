package idemgrpc

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemledger/idemledger/internal/retry"
)

// Defaults of ClientOptions, as idemhttp.Transport's.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxElapsed     = time.Minute
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 10 * time.Second
)

// ClientOptions configure UnaryClientInterceptor. Every zero value means
// the default in its comment. They are read once, when the interceptor is
// made. The defaults ride out short waits, not the lease of a call whose
// server crashed: the package documentation's Client section says what
// lasts that long.
type ClientOptions struct {
	// Methods reports whether a call of a method ("/package.Service/Method")
	// without a key gets one. Default: every method. A call whose outgoing
	// metadata already has a key is always retried with it.
	Methods func(fullMethod string) bool

	// MaxAttempts bounds the attempts per call, the first included.
	// Default DefaultMaxAttempts (5); 1 disables retries. The default
	// lasts about 4 s against in-flight answers with the default RetryInfo
	// (1 s), not the lease of a call whose server crashed: see the package
	// documentation's Client section for the count that does.
	MaxAttempts int

	// MaxElapsed bounds the time from the first attempt to the start of
	// the last. Default DefaultMaxElapsed (1 minute), the ledger's default
	// lease: to ride out a crashed call's lease, set it longer than the
	// lease (see the package documentation's Client section).
	MaxElapsed time.Duration

	// InitialBackoff is the wait before the second attempt when the server
	// sent no RetryInfo; it doubles at each attempt up to MaxBackoff, and
	// each wait is drawn between half of it and all of it. Default
	// DefaultInitialBackoff (200 ms).
	InitialBackoff time.Duration

	// MaxBackoff caps the backoff (not a server's RetryInfo delay, which is
	// honoured as long as it fits MaxElapsed and the call's deadline).
	// Default DefaultMaxBackoff (10 s).
	MaxBackoff time.Duration

	// NewKey makes the keys. Default NewKey (a random UUID). Its error
	// fails the call; no weaker key is made.
	NewKey func() (string, error)
}

// CallError is the error of a call that the client interceptor sent with a
// key and that failed: the last attempt's error, with the key and the
// number of attempts made. status.FromError and status.Code see the last
// attempt's status through it; errors.As finds it to read the key, so that
// the caller can retry later with the same key, or look the record up.
type CallError struct {
	// Key is the idempotency key every attempt carried.
	Key string
	// Attempts is the number of attempts made, at least 1.
	Attempts int
	// Err is the last attempt's error.
	Err error
}

// Error returns the last attempt's error text with the number of attempts;
// it does not contain the key.
func (e *CallError) Error() string {
	return fmt.Sprintf("idemgrpc: %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *CallError) Unwrap() error { return e.Err }

// GRPCStatus returns the last attempt's status, so that status.FromError
// and status.Code read it unchanged.
func (e *CallError) GRPCStatus() *status.Status { return status.Convert(e.Err) }

// NewKey returns a fresh idempotency key: a random UUID (RFC 9562, version
// 4) in its 36-character text form, from crypto/rand.
func NewKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("idemgrpc: no randomness for a key: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// UnaryClientInterceptor returns an interceptor that gives each call a key
// in the "idempotency-key" outgoing metadata when it has none (see
// ClientOptions.Methods), and retries a call that carries a key, with the
// same key and message, when it fails with UNAVAILABLE: the server's
// answer while the first call with the key runs, when its store is busy or
// unreachable, and gRPC's own code for a connection that failed. It waits
// the RetryInfo delay when the status has one, otherwise a capped
// exponential backoff with jitter. It never retries another code, never
// once the call's context is done, never past MaxAttempts, and never when
// the wait would end after MaxElapsed from the first attempt or after the
// call's deadline, and never an answer the server marked as replayed
// (ReplayedKey): a stored UNAVAILABLE is the first call's answer, which
// every retry would only repeat. A failed call returns a *CallError.
//
// The interceptor is safe for concurrent use.
func UnaryClientInterceptor(opts ClientOptions) grpc.UnaryClientInterceptor {
	c := opts
	if c.Methods == nil {
		c.Methods = func(string) bool { return true }
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxElapsed <= 0 {
		c.MaxElapsed = DefaultMaxElapsed
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.NewKey == nil {
		c.NewKey = NewKey
	}
	return c.intercept
}

func (c ClientOptions) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	var key string
	if keys := md.Get(MetadataKey); len(keys) > 0 {
		key = keys[0]
	} else if c.Methods(method) {
		k, err := c.NewKey()
		if err != nil {
			return err
		}
		key = k
		ctx = metadata.AppendToOutgoingContext(ctx, MetadataKey, key)
	} else {
		return invoker(ctx, method, req, reply, cc, opts...)
	}

	giveUp := time.Now().Add(c.MaxElapsed)
	for attempt := 1; ; attempt++ {
		// The replay mark travels as header metadata, or with the
		// trailers of a trailers-only answer (a status without a message):
		// read both, beside whatever the caller asked for in opts.
		var header, trailer metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
		if err == nil {
			return nil
		}
		fail := &CallError{Key: key, Attempts: attempt, Err: err}
		st := status.Convert(err)
		if st.Code() != codes.Unavailable || ctx.Err() != nil || attempt >= c.MaxAttempts ||
			replayed(header) || replayed(trailer) {
			return fail
		}
		wait, ok := retryDelay(st)
		if !ok {
			wait = c.backoff(attempt)
		}
		wake := time.Now().Add(wait)
		if wake.After(giveUp) {
			return fail
		}
		if dl, ok := ctx.Deadline(); ok && wake.After(dl) {
			return fail
		}
		if err := retry.Sleep(ctx, wait); err != nil {
			return fail
		}
	}
}

// replayed reports whether md marks the answer as a replay (ReplayedKey).
func replayed(md metadata.MD) bool {
	for _, v := range md.Get(ReplayedKey) {
		if v == "true" {
			return true
		}
	}
	return false
}

// backoff is the wait after the given attempt: InitialBackoff doubled per
// attempt, capped at MaxBackoff, then drawn in [d/2, d].
func (c ClientOptions) backoff(attempt int) time.Duration {
	return retry.Backoff(c.InitialBackoff, c.MaxBackoff, attempt)
}
