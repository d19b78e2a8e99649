package idemgrpc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// commitKey is the context key of a protected call's commit point.
type commitKey struct{}

// commitPoint is a protected call's commit point: the flag the interceptor
// reads when the handler returns, and the write of the mark into the
// record, done once.
type commitPoint struct {
	flag atomic.Bool
	once sync.Once
	mark func(ctx context.Context)
	// recovered is the earlier run's commit time for a recovery claim.
	recovered time.Time
}

// withCommit returns ctx marked as a protected call, with its commit point.
func withCommit(ctx context.Context, cp *commitPoint) context.Context {
	return context.WithValue(ctx, commitKey{}, cp)
}

// Commit marks the commit point of the call whose context is ctx: the
// handler has made its irreversible effect, so from now on its answer is
// stored whatever its code (ServerOptions.ShouldStore no longer applies),
// and a panic is stored as INTERNAL instead of releasing the key. A retry
// then replays that answer rather than running the effect again. Call it
// right after the effect, before anything that may fail.
//
// The mark is also written into the key's record before Commit returns
// (ledger.Ledger.Commit): should the process die before the answer is
// stored, a retry after the lease runs out gets DATA_LOSS
// (ReasonOutcomeNotStored) instead of a second run, or, with
// ServerOptions.Recover, runs the handler knowing it (Recovered). If the
// mark cannot be written, an event with Op "commit" reports it and the
// mark holds in this process only.
//
// It reports whether ctx is the context of a call protected by the server
// interceptor (a call without a key is not); calling it again is harmless
// and writes nothing more. It is safe to call from any goroutine.
func Commit(ctx context.Context) bool {
	cp, ok := ctx.Value(commitKey{}).(*commitPoint)
	if !ok {
		return false
	}
	cp.flag.Store(true)
	if cp.mark != nil {
		cp.once.Do(func() { cp.mark(ctx) })
	}
	return true
}

// Recovered reports, inside a handler of a protected call, when an earlier
// run of the same call passed its commit point before it vanished without
// an answer, and true, when this run recovers it (ServerOptions.Recover):
// the effect was made, so look it up rather than make it again. It
// returns false otherwise.
func Recovered(ctx context.Context) (time.Time, bool) {
	cp, ok := ctx.Value(commitKey{}).(*commitPoint)
	if !ok || cp.recovered.IsZero() {
		return time.Time{}, false
	}
	return cp.recovered, true
}
