package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// TestSQLiteBusyIsRetryable: a claim that cannot get SQLite's write lock
// within busy_timeout (another connection holds it) fails with an error
// that matches ErrRetryable and ErrBusy, keeps the driver's error reachable, and writes
// nothing; once the lock is free, the same claim succeeds.
func TestSQLiteBusyIsRetryable(t *testing.T) {
	holder, path := testdb.SQLiteFile(t, sqlite.Options{})
	ctx := context.Background()
	hold, err := holder.BeginTx(ctx, nil) // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()

	impatient, err := sqlite.Options{BusyTimeout: time.Millisecond}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	l, err := ledger.New(sqlite.New(impatient), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Claim(ctx, req("k", "p"))
	var coded interface{ Code() int }
	if !errors.Is(err, ledger.ErrRetryable) || !errors.Is(err, ledger.ErrBusy) || !errors.As(err, &coded) || coded.Code()&0xff != 5 {
		t.Fatalf("Claim while another connection writes: %v; want ErrRetryable and ErrBusy over SQLITE_BUSY (5)", err)
	}
	if want := "ledger: claim: retryable: " + coded.(error).Error(); err.Error() != want {
		t.Errorf("Claim's error reads %q, want %q", err, want)
	}

	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "tenant-1", "k"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the refused claim left a record: %v", err)
	}
	c, err := l.Claim(ctx, req("k", "p"))
	if err != nil || c.Replayed() || c.Fence != 1 {
		t.Fatalf("Claim after the lock was freed: %+v, %v", c, err)
	}
}
