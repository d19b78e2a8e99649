package pgerr

import (
	"context"
	"math"
	"strconv"
	"time"
)

// LockTimeout is the lock_timeout, in milliseconds as the text that
// set_config takes, for a statement run on the pool under ctx: the time
// left until ctx's deadline, less a margin for the server's answer to
// travel back before the client stops listening (half the time left, at
// most lockMargin), and at most what the setting holds (about 24 days).
// ok is false when ctx has no deadline: the statement then keeps the
// session's setting.
//
// The client's deadline alone is not enough: pgx answers it by closing the
// connection (its default context watcher sends no cancel request), and
// the server, which does not notice a closed connection while a backend
// waits for a lock, goes on waiting and writes once the lock is gone, long
// after the caller heard that the outcome was unknown. Cancelled by
// lock_timeout, the statement fails (55P03, busy) and has not run.
func LockTimeout(ctx context.Context) (ms string, ok bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "", false
	}
	left := time.Until(deadline)
	left -= min(lockMargin, left/2)
	// lock_timeout 0 would mean no timeout at all.
	return strconv.FormatInt(min(max(left.Milliseconds(), 1), math.MaxInt32), 10), true
}

// lockMargin bounds the time LockTimeout leaves between the server's
// timeout and the client's deadline: room for the answer to come back
// through a pooler on a loaded machine, where a quarter of a second was
// seen not to be enough.
const lockMargin = time.Second
