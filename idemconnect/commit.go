package idemconnect

import (
	"context"
	"time"

	"github.com/idemledger/idemledger/lifecycle"
)

// Commit marks the commit point of the call whose context is ctx: the
// procedure has made its irreversible effect, so from now on its answer is
// stored whatever its code (Options.ShouldStore no longer applies), and a
// panic is stored as internal instead of releasing the key. The mark is
// written into the key's record before Commit returns
// (ledger.Ledger.Commit): should the process die before the answer is
// stored, a retry after the lease gets data_loss
// (IDEMPOTENCY_OUTCOME_NOT_STORED) instead of a second run, or, with
// Options.Recover, runs knowing it (Recovered). A store that fails or
// blocks meanwhile is waited out, for as long as [lifecycle.Run.Commit]
// says.
//
// It reports whether ctx is the context of a protected call; calling it
// again is harmless and writes nothing more. It is safe to call from any
// goroutine.
//
// It returns false when the lease is lost: the handler's context is then
// cancelled with a cause matching ledger.ErrLeaseLost, the answer will
// not be stored, and a retry may run again.
func Commit(ctx context.Context) bool {
	r, ok := lifecycle.FromContext(ctx)
	return ok && r.Commit(ctx)
}

// Recovered reports, inside a protected procedure, when an earlier run of
// the same call passed its commit point before it vanished without an
// answer, and true, when this run recovers it (Options.Recover): the effect
// was made, so look it up rather than make it again.
func Recovered(ctx context.Context) (time.Time, bool) {
	r, ok := lifecycle.FromContext(ctx)
	if !ok || r.Recovered().IsZero() {
		return time.Time{}, false
	}
	return r.Recovered(), true
}
