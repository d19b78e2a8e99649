package idemgrpc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// heartbeat extends a claim's lease every third of the lease while the
// handler runs, so that a handler slower than the lease keeps its key (a
// retry after the lease ran out would otherwise take it over and run the
// handler again). It runs on a timer, so a fast handler costs one timer
// and no extension. Only ledger.ErrLeaseLost ends it; any other failure is
// tried again after a ninth of the lease, since a lease that ran out
// without a takeover is still its holder's to extend. Each failure is
// reported as an event with Op "extend".
type heartbeat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

func (s *server) startHeartbeat(ctx context.Context, c *call, claim *ledger.Claim) *heartbeat {
	hb := &heartbeat{}
	every := s.l.Lease() / 3
	tick := func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.stopped {
			return
		}
		start := time.Now()
		dctx, cancel := s.detached(ctx)
		err := s.l.Extend(dctx, claim)
		cancel()
		if err == nil {
			hb.timer.Reset(max(every-time.Since(start), 0))
			return
		}
		// Reported under the lock, so that a failed extension's event
		// comes before the call's last event (stop waits for it).
		s.emit(ctx, c, ledger.Event{Kind: failureKind(err), Op: "extend", Err: err})
		if !errors.Is(err, ledger.ErrLeaseLost) {
			hb.timer.Reset(every / 3)
		}
	}
	hb.mu.Lock()
	hb.timer = time.AfterFunc(every, tick)
	hb.mu.Unlock()
	return hb
}

// stop ends the heartbeat, waiting for an extension in progress: a claim
// must not be extended and completed at the same time.
func (hb *heartbeat) stop() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.stopped = true
	hb.timer.Stop()
}
