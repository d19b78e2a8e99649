package sqlite

import (
	"context"
	"sync"

	idriver "github.com/idemledger/idemledger/driver"
)

var _ idriver.Settler = (*Driver)(nil)

// Settle waits for the WAL checkpoint that is due, if any, so that
// background work (Purge's batches, Reclaim's steps) runs between the pool's
// checkpoints rather than beside them: see [idriver.Settler] and the
// package documentation, The WAL. It returns at once on a pool not opened
// with [Open], which checkpoints in SQLite's own way.
func (d *Driver) Settle(ctx context.Context) error {
	g, err := d.poolGate(ctx)
	if err != nil || g == nil {
		return interpretError(err)
	}
	return g.ckp.settle(ctx)
}

// gateOf remembers the gate of the pool a driver was built on, found once
// through a connection (nil for a pool not opened with Open), since
// database/sql does not hand out its connector.
type gateOf struct {
	mu    sync.Mutex
	known bool
	g     *gate
}

// poolGate returns the gate of d's pool, or nil when the pool was not
// opened with Open.
func (d *Driver) poolGate(ctx context.Context) (*gate, error) {
	d.gate.mu.Lock()
	defer d.gate.mu.Unlock()
	if d.gate.known {
		return d.gate.g, nil
	}
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var g *gate
	if err := conn.Raw(func(dc any) error {
		if c, ok := dc.(*gateConn); ok {
			g = c.gate
		}
		return nil
	}); err != nil {
		return nil, err
	}
	d.gate.known, d.gate.g = true, g
	return g, nil
}
