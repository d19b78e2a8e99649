package idemhttp

import (
	"errors"
	"sync"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// heartbeat extends a claim's lease while its handler runs, every third of
// the lease, so that a handler slower than the lease keeps its key: without
// it, a retry arriving after the lease ran out would take the key over and
// run the handler a second time. It uses a timer rather than a goroutine, so
// a fast handler costs one timer and no extension.
//
// Only ErrLeaseLost ends it early. Any other failure (SQLITE_BUSY behind a
// long writer, a dropped PostgreSQL connection, a timeout) is retried
// sooner than the next regular beat: a lease that ran out without a
// takeover is still the holder's to extend (see ledger.Ledger.Extend), so
// an outage shorter than the lease costs nothing, and giving up would hand
// the key to the first retry after any outage while the handler still
// runs. An outage longer than the lease is beyond any heartbeat: a retry
// that waits behind the same lock may be served before the extension when
// it ends, and take the expired lease over.
type heartbeat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

func (m *middleware[TTx]) startHeartbeat(p *prepared, c *ledger.Claim) *heartbeat {
	hb := &heartbeat{}
	every := m.l.Lease() / 3
	tick := func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.stopped {
			return
		}
		start := time.Now()
		ctx, cancel := m.detached(p.r)
		err := m.l.Extend(ctx, c)
		cancel()
		if err == nil {
			// The beat keeps its period whatever the extension took.
			hb.timer.Reset(max(every-time.Since(start), 0))
			return
		}
		// Reported under the lock, so that a failed extension's event
		// comes before the request's last event (stop waits for it).
		m.cfg.emit(p, ledger.Event{Kind: failureKind(err), Op: "extend", Err: err})
		// A lost lease (taken over, or purged) ends the beat, and the
		// completion will fail too; any other failure is tried again
		// sooner than the next regular beat.
		if !errors.Is(err, ledger.ErrLeaseLost) {
			hb.timer.Reset(every / 3)
		}
	}
	hb.mu.Lock()
	hb.timer = time.AfterFunc(every, tick)
	hb.mu.Unlock()
	return hb
}

// stop ends the heartbeat, waiting for an extension in progress: the claim
// must not be extended and completed at the same time.
func (hb *heartbeat) stop() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.stopped = true
	hb.timer.Stop()
}
