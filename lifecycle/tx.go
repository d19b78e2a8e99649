package lifecycle

import (
	"context"

	"github.com/idemledger/idemledger/ledger"
)

// TxDecision is what became of a request run in transaction mode
// ([DecideTx]).
type TxDecision struct {
	// Verdict is Claimed when fn ran under the key, Replayed when the key's
	// outcome was stored already, Refused when the request must be
	// refused (Refusal says why), and Unprotected for a request with no
	// key, which fn ran with nothing stored.
	Verdict Verdict
	// Outcome is, for Claimed and Unprotected, what fn returned, committed
	// with its writes (and, for Claimed, with the record) when Err is nil;
	// for Replayed the stored outcome.
	Outcome ledger.Outcome
	// Err, for Claimed and Unprotected, is why nothing was committed: fn's
	// own error, returned as is, or the failure of the transaction after
	// fn ran (storing the outcome, the commit, or a statement of fn's
	// that aborted it). Everything was rolled back then.
	Err error
	// Refusal says why, for Refused.
	Refusal Refusal
	// Event is the event to report for Replayed and Refused, as
	// [Decision.Event].
	Event ledger.Event
}

// DecideTx is the transaction-mode twin of [Decide]: it runs fn at most
// once per req's key inside a transaction of l's database that it begins
// and ends, so that fn's writes, the ledger's record and fn's outcome
// commit together ([ledger.MutateOutcomeCommit]), and answers every other
// request with the key from the record.
//
// Before it begins the transaction it asks for an outcome already stored:
// with a plain read where BEGIN takes the database's write lock
// ([ledger.Ledger.Lookup], SQLite), so that replays do not queue behind
// writers, and from the ledger's cache alone elsewhere
// ([ledger.Ledger.Recall], no round trip). The transaction runs with
// ctx's values, not its cancellation. fn gets a context derived from it.
// A panic of fn rolls the transaction back and goes on.
//
// A request whose Key is empty is run Unprotected: in a transaction of its
// own, committed unless fn returns an error, with nothing stored.
func DecideTx[TTx any](ctx context.Context, l *ledger.Ledger[TTx], req ledger.Request, fn func(ctx context.Context, tx TTx) (ledger.Outcome, error)) TxDecision {
	d := l.Driver()
	tctx := context.WithoutCancel(ctx)
	if req.Key == "" {
		tx, err := d.Begin(tctx)
		if err != nil {
			return refusedTx(Refuse(ctx, err, Config{}))
		}
		defer d.Rollback(tctx, tx) // after a commit, a no-op; on a panic, the rollback
		out, err := fn(tctx, tx)
		if err == nil {
			err = d.Commit(tctx, tx)
		}
		if err != nil {
			_ = d.Rollback(tctx, tx)
			return TxDecision{Verdict: Unprotected, Err: err}
		}
		return TxDecision{Verdict: Unprotected, Outcome: out}
	}
	look := l.Lookup
	if !d.BeginLocks() {
		look = l.Recall
	}
	found, err := look(ctx, req)
	switch {
	case err != nil:
		return refusedTx(Refuse(ctx, err, Config{}))
	case found != nil:
		return replayedTx(found.Replay.Outcome)
	}
	tx, err := d.Begin(tctx)
	if err != nil {
		return refusedTx(Refuse(ctx, err, Config{}))
	}
	defer d.Rollback(tctx, tx) // after a commit, a no-op; on a panic, the rollback
	ran := false
	res, err := ledger.MutateOutcomeCommit(tctx, l, tx, req, func(ctx context.Context) (ledger.Outcome, error) {
		ran = true
		return fn(ctx, tx)
	})
	switch {
	case err != nil:
		// Rolled back now rather than when DecideTx returns: the caller
		// may go on to the store (SQLite's write lock is held until then).
		_ = d.Rollback(tctx, tx)
		if ran {
			return TxDecision{Verdict: Claimed, Err: err}
		}
		// The claim failed, or a replay's commit.
		return refusedTx(Refuse(ctx, err, Config{}))
	case res.Replayed:
		return replayedTx(res.Value)
	}
	return TxDecision{Verdict: Claimed, Outcome: res.Value}
}

func refusedTx(d Decision) TxDecision {
	return TxDecision{Verdict: Refused, Refusal: d.Refusal, Event: d.Event}
}

func replayedTx(out ledger.Outcome) TxDecision {
	return TxDecision{Verdict: Replayed, Outcome: out, Event: ledger.Event{Kind: ledger.EventReplayed}}
}
