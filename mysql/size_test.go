package mysql_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

// TestOutcomeTooLargeForServer sends an outcome over the server's
// max_allowed_packet, which the driver did not get to check (its limit
// unknown, as before Prepare read it): the server's refusal (1153) is
// reported as an outcome too large, with the server's error, not as a lost
// connection that the ledger would retry until the lease ran out; and the
// lease still holds, for a small marker. (TestOutcomeTooLarge in package
// ledger covers the check before sending.)
func TestOutcomeTooLargeForServer(t *testing.T) {
	d := testdb.MySQLDB(t)
	ctx := context.Background()
	var packet int64
	if err := d.SQL.QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&packet); err != nil {
		t.Fatal(err)
	}
	drv := mysql.New(d.SQL)
	l, err := ledger.New(drv, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	drv.ForgetMaxPacket()
	r := ledger.Request{Scope: "s", Key: "k", Fingerprint: [32]byte{1}}
	c, err := l.Claim(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Complete(ctx, c, ledger.Outcome{Status: 201, Body: bytes.Repeat([]byte("x"), int(packet))})
	var tl *idriver.TooLargeError
	if !errors.Is(err, ledger.ErrOutcomeTooLarge) || !errors.As(err, &tl) || tl.Err == nil {
		t.Fatalf("Complete over max_allowed_packet = %v, want ErrOutcomeTooLarge with the server's error", err)
	}
	if err := l.Complete(ctx, c, ledger.Outcome{Kind: "marker", Status: 410}); err != nil {
		t.Fatalf("Complete of a marker after the refusal: %v", err)
	}
	if rec, err := l.Get(ctx, "s", "k"); err != nil || rec.Outcome.Kind != "marker" {
		t.Fatalf("record %+v, %v; want the marker", rec, err)
	}
}
