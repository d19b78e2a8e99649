// Package spans records what the SQLite pool and the purge did and when
// (checkpoints, purge batches, reclaim steps), for the scale measurements
// that put them on one clock with the requests beside them. It
// records nothing unless a test set a recorder: a disabled Add costs one
// atomic load.
package spans

import (
	"sync/atomic"
	"time"
)

// Span is one thing that ran from Start for Took. Wait, when set, is how
// long it queued for the pool's write slot before Start; N and M are
// counts whose meaning the kind gives (see the kinds below).
type Span struct {
	Kind  string
	Start time.Time
	Took  time.Duration
	Wait  time.Duration
	N, M  int64
}

// The kinds recorded.
const (
	// PassiveCheckpoint: a PASSIVE checkpoint outside the slot; N the
	// WAL's frames, M those copied.
	PassiveCheckpoint = "passive checkpoint"
	// BoundCheckpoint: the checkpointer's RESTART checkpoint, holding the
	// slot; Wait its wait for the slot, N and M as above.
	BoundCheckpoint = "restart checkpoint (checkpointer)"
	// WriterCheckpoint: the RESTART checkpoint of a writer that took the
	// WAL past twice the bound, holding the slot after its COMMIT.
	WriterCheckpoint = "restart checkpoint (writer)"
	// PurgeBegin, [PurgeDelete], [PurgeCommit]: the three parts of a purge
	// batch: its BEGIN (on SQLite, mostly the wait for the slot), its
	// DELETE (N the rows), its COMMIT (with what the pool does before it
	// gives the slot back).
	PurgeBegin  = "purge begin"
	PurgeDelete = "purge delete"
	PurgeCommit = "purge commit"
	// ReclaimStep: one PRAGMA incremental_vacuum step, its wait for the
	// slot included; N the pages asked for.
	ReclaimStep = "reclaim step"
)

var rec atomic.Pointer[func(Span)]

// Set makes f receive every span from now on (nil: none), and returns a
// function that sets back the recorder there was before. f is called from
// many goroutines at once.
func Set(f func(Span)) (restore func()) {
	var p *func(Span)
	if f != nil {
		p = &f
	}
	old := rec.Swap(p)
	return func() { rec.Store(old) }
}

// On reports whether a recorder is set, so that callers skip the clock
// readings a span needs when none is.
func On() bool { return rec.Load() != nil }

// Add gives s to the recorder, if one is set.
func Add(s Span) {
	if f := rec.Load(); f != nil {
		(*f)(s)
	}
}
