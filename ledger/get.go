package ledger

import (
	"context"
)

// Get returns the record of key in scope as stored, or an error wrapping
// ErrNotFound. An expired record that Purge has not deleted yet is still
// returned; see Record.Expired. A bad scope or key returns an error
// wrapping ErrInvalidRequest before db is used.
func (l *Ledger) Get(ctx context.Context, db DBTX, scope, key string) (*Record, error) {
	if err := l.checkCall(ctx, db); err != nil {
		return nil, err
	}
	if err := l.checkKey(scope, key); err != nil {
		return nil, err
	}
	r, _, err := l.eng.get(ctx, db, scope, key)
	if err != nil {
		return nil, wrapOp("get", err)
	}
	return r, nil
}
