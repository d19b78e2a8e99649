package mysql_test

import (
	"context"
	"database/sql"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

var (
	registerOutage sync.Once
	serverDown     atomic.Bool // the outage dialer refuses while set
)

// TestPrepareAfterOutage: a ledger made while the server cannot be reached
// starts with its statements unprepared, and prepares them in the
// background of the first operation once the server is back; after Close
// nothing prepares them again.
func TestPrepareAfterOutage(t *testing.T) {
	d := testdb.MySQLDB(t)
	registerOutage.Do(func() {
		gomysql.RegisterDialContext("idemledger-outage", func(ctx context.Context, addr string) (net.Conn, error) {
			if serverDown.Load() {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		})
	})
	cfg, err := gomysql.ParseDSN(d.Source)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net = "idemledger-outage"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	req := func(key string) ledger.Request {
		return ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))}
	}

	serverDown.Store(true)
	t.Cleanup(func() { serverDown.Store(false) })
	drv := mysql.New(db)
	l, err := ledger.New(drv, ledger.Options{})
	if err != nil {
		t.Fatalf("New while the server is down: %v, want a ledger that starts", err)
	}
	if drv.Prepared() {
		t.Fatal("prepared while the server is down")
	}
	drv.RetryPrepareNow()
	if _, err := l.Claim(ctx, req("down")); err == nil {
		t.Fatal("Claim succeeded while the server is down")
	}

	serverDown.Store(false)
	drv.RetryPrepareNow()
	if _, err := l.Claim(ctx, req("back")); err != nil {
		t.Fatalf("Claim once the server is back (unprepared): %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); !drv.Prepared(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("statements still unprepared 10 s after an operation on a reachable server")
		}
	}
	// The prepared statements serve the next operations.
	c, err := l.Claim(ctx, req("prepared"))
	if err != nil {
		t.Fatalf("Claim with the statements prepared: %v", err)
	}
	if c.Replay != nil {
		t.Fatalf("a new key replayed: %+v", c.Replay)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	drv.RetryPrepareNow()
	if _, err := l.Claim(ctx, req("closed")); err != nil {
		t.Fatalf("Claim after Close (unprepared): %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if drv.Prepared() {
		t.Fatal("statements prepared again after Close")
	}
}
