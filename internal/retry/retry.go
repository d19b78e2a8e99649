// Package retry holds the waits of the client-side retry loops of idemhttp
// (Transport) and idemgrpc (UnaryClientInterceptor).
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the wait after the given attempt (1 for the first): initial
// doubled per attempt after the first, capped at max, then drawn at random
// in [d/2, d] so that clients that failed together do not retry together.
// initial and max must be positive.
func Backoff(initial, max time.Duration, attempt int) time.Duration {
	d := initial
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + rand.N(d-half+1)
}

// Sleep waits d, or until ctx ends, and then returns ctx's error. A d of
// zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
