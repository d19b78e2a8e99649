// Package eventlog keeps the events a [ledger.Observer] receives, for the
// tests of the packages that report them (idemhttp, idemgrpc, idemgin).
package eventlog

import (
	"context"
	"sync"

	"github.com/idemledger/idemledger/ledger"
)

// Recorder is a [ledger.Observer] that keeps every event, in order. It is
// safe for concurrent use; the zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []ledger.Event
}

// Observe keeps e.
func (r *Recorder) Observe(_ context.Context, e ledger.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// All returns a copy of the events kept so far.
func (r *Recorder) All() []ledger.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ledger.Event(nil), r.events...)
}

// Reset forgets the events kept so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
