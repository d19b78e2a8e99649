package testdb

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// CountWrites makes the connections of cfg count their writes to the
// server in writes. pgconn writes everything it has queued in one Write
// when it waits for an answer, so each write is one round trip: what the
// tests of batched statements (pgxv5, idemhttp's TxHandler, consume's
// HandleTx) hold the drivers to.
func CountWrites(cfg *pgconn.Config, writes *atomic.Int64) {
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{conn, writes}, nil
	}
}

// countingConn is a connection that counts its writes.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}
