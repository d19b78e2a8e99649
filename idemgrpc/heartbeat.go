package idemgrpc

import (
	"context"

	"github.com/idemledger/idemledger/internal/heartbeat"
	"github.com/idemledger/idemledger/ledger"
)

// startHeartbeat keeps claim's lease while the handler of c runs (see
// idemledger's internal/heartbeat); each failed extension is reported as
// an event with Op "extend", before the call's last event.
func (s *server) startHeartbeat(ctx context.Context, c *call, claim *ledger.Claim) *heartbeat.Beat {
	extend := func() error {
		dctx, cancel := s.detached(ctx)
		defer cancel()
		return s.l.Extend(dctx, claim)
	}
	failed := func(err error) {
		s.emit(ctx, c, ledger.Event{Kind: failureKind(err), Op: "extend", Err: err})
	}
	return heartbeat.Start(s.l.Lease(), extend, failed)
}
