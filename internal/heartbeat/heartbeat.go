// Package heartbeat keeps a lease-mode claim alive while its handler runs,
// for idemhttp's middleware and idemgrpc's interceptor.
//
// A Beat extends the lease every third of it, so that a handler slower than
// the lease keeps its key: without it, a retry arriving after the lease ran
// out would take the key over and run the handler a second time. It uses a
// timer rather than a goroutine, so a fast handler costs one timer and no
// extension.
//
// Only ledger.ErrLeaseLost (the lease taken over, or purged) ends it early:
// the completion will fail too. Any other failure (SQLITE_BUSY behind a
// long writer, a dropped PostgreSQL connection, a timeout) is tried again
// after a ninth of the lease, sooner than the next regular beat: a lease
// that ran out without a takeover is still the holder's to extend (see
// ledger.Ledger.Extend), so an outage shorter than the lease costs nothing,
// and giving up would hand the key to the first retry after any outage
// while the handler still runs. An outage longer than the lease is beyond
// any heartbeat: a retry that waits behind the same lock may be served
// before the extension when it ends, and take the expired lease over.
package heartbeat

import (
	"errors"
	"sync"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// Beat is a running heartbeat; Stop ends it.
type Beat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

// Start calls extend every third of lease until Stop. A failed extension's
// error goes to failed, under the Beat's lock, so that what failed reports
// comes before anything the caller reports after Stop.
func Start(lease time.Duration, extend func() error, failed func(error)) *Beat {
	b := &Beat{}
	every := lease / 3
	tick := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		start := time.Now()
		err := extend()
		if err == nil {
			// The beat keeps its period whatever the extension took.
			b.timer.Reset(max(every-time.Since(start), 0))
			return
		}
		failed(err)
		if !errors.Is(err, ledger.ErrLeaseLost) {
			b.timer.Reset(every / 3)
		}
	}
	b.mu.Lock()
	b.timer = time.AfterFunc(every, tick)
	b.mu.Unlock()
	return b
}

// Stop ends the heartbeat, waiting for an extension in progress: a claim
// must not be extended and completed at the same time.
func (b *Beat) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.timer.Stop()
}
