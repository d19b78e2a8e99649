package idemgrpc

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/lifecycle"
)

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
// ServerOptions.Recover, runs the handler knowing it (Recovered). A store
// that fails or blocks meanwhile is waited out, for as long as
// [lifecycle.Run.Commit] says.
//
// It reports whether ctx is the context of a call protected by the server
// interceptor (a call without a key is not); calling it again is harmless
// and writes nothing more. It is safe to call from any goroutine.
//
// It returns false when the lease is lost: the handler's context is then
// cancelled with a cause matching ledger.ErrLeaseLost, the answer will
// not be stored, and a retry may run again.
func Commit(ctx context.Context) bool {
	r, ok := lifecycle.FromContext(ctx)
	return ok && r.Commit(ctx)
}

// Recovered reports, inside a handler of a protected call, when an earlier
// run of the same call passed its commit point before it vanished without
// an answer, and true, when this run recovers it (ServerOptions.Recover):
// the effect was made, so look it up rather than make it again. It
// returns false otherwise.
func Recovered(ctx context.Context) (time.Time, bool) {
	r, ok := lifecycle.FromContext(ctx)
	if !ok || r.Recovered().IsZero() {
		return time.Time{}, false
	}
	return r.Recovered(), true
}
