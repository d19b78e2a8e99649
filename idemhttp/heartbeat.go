package idemhttp

import (
	"log/slog"
	"sync"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

// heartbeat extends a claim's lease while its handler runs, every third of
// the lease, so that a handler slower than the lease keeps its key: without
// it, a retry arriving after the lease ran out would take the key over and
// run the handler a second time. It uses a timer rather than a goroutine, so
// a fast handler costs one timer and no extension.
type heartbeat struct {
	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
}

func (m *middleware) startHeartbeat(p *prepared, c *ledger.Claim) *heartbeat {
	hb := &heartbeat{}
	every := m.l.Lease() / 3
	tick := func() {
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.stopped {
			return
		}
		ctx, cancel := m.detached(p.r)
		err := m.l.Extend(ctx, m.db, c)
		cancel()
		if err != nil {
			// The lease is lost (or the store is down): the completion will
			// say so too. Extending again would not help.
			m.cfg.log.LogAttrs(ctx, slog.LevelError, "idempotency: lease extension failed",
				slog.String("method", p.r.Method), slog.String("path", p.r.URL.Path),
				slog.String("error", p.redact(err)))
			return
		}
		hb.timer.Reset(every)
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
