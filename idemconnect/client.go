package idemconnect

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/idemledger/idemledger/idemclient"
	"github.com/idemledger/idemledger/internal/retry"
)

// Defaults of ClientOptions.
const (
	DefaultMaxAttempts    = 5
	DefaultMaxElapsed     = 30 * time.Second
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 2 * time.Second
)

// ClientOptions configure NewClientInterceptor; zero values mean the
// defaults.
type ClientOptions struct {
	// MaxAttempts bounds the attempts of one call, the first included.
	// Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of
	// the last. Default DefaultMaxElapsed.
	MaxElapsed time.Duration
	// InitialBackoff and MaxBackoff bound the exponential backoff (with
	// jitter) used when the server sends no RetryInfo delay. Defaults
	// DefaultInitialBackoff and DefaultMaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// NewKey makes the key of a call that has none. Default idemclient.NewKey
	// (a random UUID).
	NewKey func() (string, error)
}

// NewClientInterceptor returns the client interceptor of the package doc:
// a key for each unary call that has none (sent as the Idempotency-Key
// header), and retries of unavailable with the same key and message. The
// error of a failed call is the last attempt's, with the key in its
// metadata under HeaderName so that the caller can retry later with it.
func NewClientInterceptor(opts ClientOptions) connect.Interceptor {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxElapsed <= 0 {
		opts.MaxElapsed = DefaultMaxElapsed
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.NewKey == nil {
		opts.NewKey = idemclient.NewKey
	}
	return &client{opts}
}

type client struct{ opts ClientOptions }

func (c *client) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (c *client) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (c *client) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient {
			return next(ctx, req)
		}
		key := req.Header().Get(HeaderName)
		if key == "" {
			k, err := c.opts.NewKey()
			if err != nil {
				return nil, err
			}
			if err := idemclient.SetKey(req.Header(), k); err != nil {
				return nil, err
			}
			key = req.Header().Get(HeaderName)
		}
		giveUp := time.Now().Add(c.opts.MaxElapsed)
		for attempt := 1; ; attempt++ {
			res, err := next(ctx, req)
			if err == nil {
				return res, nil
			}
			ce, ok := err.(*connect.Error)
			if !ok || ce.Code() != connect.CodeUnavailable || ce.Meta().Get(ReplayedHeader) == "true" ||
				ctx.Err() != nil || attempt >= c.opts.MaxAttempts {
				return nil, withKey(err, key)
			}
			wait, ok := retryDelay(ce)
			if !ok {
				wait = retry.Backoff(c.opts.InitialBackoff, c.opts.MaxBackoff, attempt)
			}
			wake := time.Now().Add(wait)
			if dl, ok := ctx.Deadline(); wake.After(giveUp) || ok && wake.After(dl) {
				return nil, withKey(err, key)
			}
			if retry.Sleep(ctx, wait) != nil {
				return nil, withKey(err, key)
			}
		}
	}
}

// withKey puts the call's key (as sent) in the metadata of a Connect
// error, so that the caller can retry later with the same key.
func withKey(err error, key string) error {
	if ce, ok := err.(*connect.Error); ok {
		ce.Meta().Set(HeaderName, key)
	}
	return err
}

// retryDelay is the RetryInfo delay of a Connect error, if it has one.
func retryDelay(ce *connect.Error) (time.Duration, bool) {
	for _, d := range ce.Details() {
		v, err := d.Value()
		if ri, ok := v.(*errdetails.RetryInfo); err == nil && ok && ri.RetryDelay.IsValid() {
			return max(ri.RetryDelay.AsDuration(), 0), true
		}
	}
	return 0, false
}
