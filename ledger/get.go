package ledger

import (
	"context"

	"github.com/idemledger/idemledger/driver"
)

// Get returns the record of key in scope as stored, or an error wrapping
// [ErrNotFound], also for a record that Release ended. An expired record that Purge has not deleted yet is still
// returned; see [Record.Expired]. A bad scope or key returns an error
// wrapping [ErrInvalidRequest] before the database is used.
func (l *Ledger[TTx]) Get(ctx context.Context, scope, key string) (*Record, error) {
	if err := l.checkCall(ctx); err != nil {
		return nil, err
	}
	if err := l.checkKey(scope, key); err != nil {
		return nil, err
	}
	got, err := l.db.Get(ctx, driver.GetParams{Scope: scope, Key: key, Now: l.clock()})
	if err != nil {
		return nil, wrapOp("get", classify(err))
	}
	if got.Row == nil || got.Row.State == "released" {
		// A released record holds no operation, only the key's fence.
		return nil, wrapOp("get", ErrNotFound)
	}
	r, err := record(got.Row)
	if err != nil {
		return nil, wrapOp("get", err)
	}
	return r, nil
}
