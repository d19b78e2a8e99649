package driver

import "context"

// backgroundKey is the context key of Background's mark.
type backgroundKey struct{}

// Background returns ctx marked as background work's: Ledger.Purge begins
// its batches, and Ledger.Reclaim its work, under it. A driver that queues
// its pool's writers itself (SQLite's) lets the writers already waiting go
// first when it begins a transaction under this mark, where it may let
// another newcomer take a free turn ahead of them (requests
// before the purge beside them).
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx carries [Background]'s mark.
func IsBackground(ctx context.Context) bool {
	v, _ := ctx.Value(backgroundKey{}).(bool)
	return v
}
