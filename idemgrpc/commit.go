package idemgrpc

import (
	"context"
	"sync/atomic"
)

// commitKey is the context key of a protected call's commit point.
type commitKey struct{}

// withCommit returns ctx marked as a protected call, with its commit flag.
func withCommit(ctx context.Context) (context.Context, *atomic.Bool) {
	flag := new(atomic.Bool)
	return context.WithValue(ctx, commitKey{}, flag), flag
}

// Commit marks the commit point of the call whose context is ctx: the
// handler has made its irreversible effect, so from now on its answer is
// stored whatever its code (ServerOptions.ShouldStore no longer applies),
// and a panic is stored as INTERNAL instead of releasing the key. A retry
// then replays that answer rather than running the effect again. Call it
// right after the effect, before anything that may fail.
//
// It reports whether ctx is the context of a call protected by the server
// interceptor (a call without a key is not); calling it again is harmless.
// It is safe to call from any goroutine.
func Commit(ctx context.Context) bool {
	flag, ok := ctx.Value(commitKey{}).(*atomic.Bool)
	if ok {
		flag.Store(true)
	}
	return ok
}
