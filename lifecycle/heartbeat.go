package lifecycle

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// ErrLeaseExpired is what a beat reports to lost when the lease, as last
// confirmed, ran out before an extension succeeded. It matches
// [ledger.ErrLeaseLost]: the lease may have been taken over, and nothing
// tells the holder whether it was.
var ErrLeaseExpired = fmt.Errorf("the lease ran out before an extension succeeded: %w", ledger.ErrLeaseLost)

// The heartbeat keeps a lease-mode claim alive while its handler runs,
// for idemhttp's middleware and idemgrpc's interceptor.
//
// A beat extends the lease every third of it, so that a handler slower than
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
// while the handler still runs.
//
// An outage longer than the lease is beyond any heartbeat: a retry that
// waits behind the same lock may be served before the extension when it
// ends, and take the expired lease over. What a Beat can do is say so in
// time. It keeps a second timer at the end of the lease as last confirmed
// (measured from when the confirming extension was sent, so never later
// than the server's own end), and when that end passes with no extension
// confirmed it reports ErrExpired: from then on the handler can no longer
// know that it holds the key, and must not start an effect that a retry
// may be making too.
//
// beat is a running heartbeat; Stop ends it.
type beat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer

	// end fires when the lease as last confirmed runs out. It is reset by
	// the beat (under mu) and fires on its own goroutine, which must not
	// wait for mu: the beat holds mu while an extension waits on the store,
	// and that wait is what end is there to cut short. endMu orders what it
	// reports before Stop returns.
	end   *time.Timer
	endMu sync.Mutex
	ended bool
}

// Start calls extend every third of lease until Stop. A failed extension's
// error goes to failed, under the beat's lock, so that what failed reports
// comes before anything the caller reports after Stop. lost hears of the
// end of the lease: the extension's error when it matches
// ledger.ErrLeaseLost, or ErrLeaseExpired when the lease ran out unconfirmed
// (it may hear of both, in either order).
func startBeat(lease, elapsed time.Duration, extend func() error, failed, lost func(error)) *beat {
	b := &beat{}
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
			// The lease now ends lease after the extension was sent, or
			// later. The beat keeps its period whatever the extension
			// took.
			b.end.Reset(max(lease-time.Since(start), 0))
			b.timer.Reset(max(every-time.Since(start), 0))
			return
		}
		failed(err)
		if errors.Is(err, ledger.ErrLeaseLost) {
			b.endMu.Lock()
			if !b.ended {
				b.ended = true
				b.end.Stop()
				lost(err)
			}
			b.endMu.Unlock()
			return
		}
		b.timer.Reset(every / 3)
	}
	expire := func() {
		b.endMu.Lock()
		defer b.endMu.Unlock()
		if b.ended {
			return
		}
		b.ended = true
		lost(ErrLeaseExpired)
	}
	b.mu.Lock()
	// The lease began elapsed ago, when the claim (or the renewal that
	// followed a slow claim) was sent: the server's lease cannot end
	// later than that plus the lease.
	b.end = time.AfterFunc(max(lease-elapsed, 0), expire)
	b.timer = time.AfterFunc(max(every-elapsed, 0), tick)
	b.mu.Unlock()
	return b
}

// Stop ends the heartbeat, waiting for an extension in progress (a claim
// must not be extended and completed at the same time) and for a report
// to lost in progress.
func (b *beat) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.timer.Stop()
	b.endMu.Lock()
	b.ended = true
	b.end.Stop()
	b.endMu.Unlock()
}
