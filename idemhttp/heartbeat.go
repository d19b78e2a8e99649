package idemhttp

import (
	"github.com/idemledger/idemledger/internal/heartbeat"
	"github.com/idemledger/idemledger/ledger"
)

// startHeartbeat keeps c's lease while the handler of p runs (see package
// heartbeat); each failed extension is reported as an event with Op
// "extend", before the request's last event.
func (m *middleware[TTx]) startHeartbeat(p *prepared, c *ledger.Claim) *heartbeat.Beat {
	extend := func() error {
		ctx, cancel := m.detached(p.r)
		defer cancel()
		return m.l.Extend(ctx, c)
	}
	failed := func(err error) {
		m.cfg.emit(p, ledger.Event{Kind: failureKind(err), Op: "extend", Err: err})
	}
	return heartbeat.Start(m.l.Lease(), extend, failed)
}
