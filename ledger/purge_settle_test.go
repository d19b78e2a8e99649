package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/sqlite"
)

// settleLog is the SQLite driver with its Settle logged in order with
// Purge's batches.
type settleLog struct {
	*sqlite.Driver
	events *[]string
}

func (s settleLog) Settle(ctx context.Context) error {
	*s.events = append(*s.events, "settle")
	return s.Driver.Settle(ctx)
}

// TestPurgeSettles: Purge waits for the engine's own work (driver.Settler:
// SQLite's checkpoint) after every batch that is followed by another, and
// after none other: batch, settle, batch, settle, …, batch. It does not
// run in parallel (batchDone is the package's).
func TestPurgeSettles(t *testing.T) {
	db, _ := openSQLiteAs(t, sqlite.SynchronousNormal, sqliteSetup{true, true, true})
	now := time.Now()
	testdb.FillSQLite(t, db, testdb.Fill{Records: 5000, Expired: 3500, Now: now.UnixMilli(), Body: 220})
	var events []string
	l, err := New[*sql.Tx](settleLog{sqlite.New(db), &events}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batchDone = func(rows int64, _ time.Duration) { events = append(events, fmt.Sprintf("batch %d", rows)) }
	defer func() { batchDone = nil }()

	n, err := l.Purge(context.Background(), PurgeOptions{BatchSize: 1000, NoReclaim: true})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3500 {
		t.Errorf("purged %d, want 3500", n)
	}
	want := []string{"batch 1000", "settle", "batch 1000", "settle", "batch 1000", "settle", "batch 500"}
	if !slices.Equal(events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}
