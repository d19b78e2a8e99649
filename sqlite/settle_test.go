package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/idemledger/idemledger/internal/spans"
)

// recordSpans keeps the spans of package spans while the test runs. Tests
// that use it do not run in parallel (the recorder is the process's).
func recordSpans(t *testing.T) func() []spans.Span {
	var mu sync.Mutex
	var all []spans.Span
	t.Cleanup(spans.Set(func(s spans.Span) {
		mu.Lock()
		all = append(all, s)
		mu.Unlock()
	}))
	return func() []spans.Span {
		mu.Lock()
		defer mu.Unlock()
		return append([]spans.Span(nil), all...)
	}
}

func countKind(all []spans.Span, kind string) int {
	n := 0
	for _, s := range all {
		if s.Kind == kind {
			n++
		}
	}
	return n
}

// TestSettle: Settle returns at once when no checkpoint is due, and
// otherwise only after the pool's checkpoint ran and copied every frame
// written before it (nothing else wrote meanwhile).
func TestSettle(t *testing.T) {
	got := recordSpans(t)
	db := walTable(t, filepath.Join(t.TempDir(), "settle.db"), 0)
	ctx := context.Background()
	d := New(db)
	if err := d.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countKind(got(), spans.PassiveCheckpoint); n != 0 {
		t.Fatalf("%d checkpoints for a settle with nothing due, want 0", n)
	}
	// More than settlePages frames, fewer than checkpointPages: due for
	// a settle, not yet for the writers' own wake.
	for range 20 {
		if err := insertRows(ctx, db, 8, 1500); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	all := got()
	if countKind(all, spans.PassiveCheckpoint) == 0 {
		t.Fatalf("Settle returned before a checkpoint ran; spans: %+v", all)
	}
	last := all[len(all)-1]
	if last.Kind != spans.PassiveCheckpoint || last.N == 0 || last.M != last.N {
		t.Errorf("the last checkpoint before Settle returned: %+v, want a PASSIVE one that copied all of a non-empty WAL", last)
	}
}

// TestSettleBoundsWALWithoutSlot: a writer that settles after each of its
// transactions, as Purge does, is background work, and the WAL is bounded
// without a checkpoint that holds the slot (the requests' queue): the
// checkpoint its settle waits for copies the WAL to its end, even past
// walBoundPages, the next writer starts it over, and the pool's count of
// its frames follows from the checkpoints' own figures. Before, the
// checkpointer took the slot at every bound and ran a RESTART checkpoint
// there, which held every request 10 ms at the median beside a purge at 1M
// records. It asserts counts and the -wal file's size, not a
// time.
func TestSettleBoundsWALWithoutSlot(t *testing.T) {
	skipUnlessLong(t) // about three times walBoundPages written through SQLite under -race
	got := recordSpans(t)
	path := filepath.Join(t.TempDir(), "settle.db")
	db := walTable(t, path, 0)
	ctx := context.Background()
	d := New(db)
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// One transaction past the bound (each row on a page of its own),
	// then 100 small ones: about three times walBoundPages in all.
	if err := insertRows(ctx, db, walBoundPages+500, 1500); err != nil {
		t.Fatal(err)
	}
	if err := d.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	first := walSize()
	const txs, rows = 100, 100
	for range txs {
		if err := insertRows(ctx, db, rows, 1500); err != nil {
			t.Fatal(err)
		}
		if err := d.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all := got()
	for _, k := range []string{spans.BoundCheckpoint, spans.WriterCheckpoint} {
		if n := countKind(all, k); n != 0 {
			t.Errorf("%d checkpoints of kind %q held the slot, want 0", n, k)
		}
	}
	// The WAL started over: a checkpoint found fewer frames in it than
	// the one before.
	restarts, prev, most := 0, int64(0), int64(0)
	for _, s := range all {
		if s.Kind != spans.PassiveCheckpoint {
			continue
		}
		if s.N < prev {
			restarts++
		}
		prev, most = s.N, max(most, s.N)
	}
	last := walSize()
	t.Logf("a transaction of %d rows, then %d of %d, a settle after each: %d checkpoints, the WAL held at most %d frames and started over %d times; its file %d bytes after the first, %d at the end",
		walBoundPages+500, txs, rows, countKind(all, spans.PassiveCheckpoint), most, restarts, first, last)
	if most < walBoundPages {
		t.Errorf("the WAL held at most %d frames, want past the bound (%d): the test lost its meaning", most, walBoundPages)
	}
	if restarts == 0 {
		t.Error("the WAL never started over")
	}
	// Started over after the first transaction, the file never grows
	// again.
	if last != first {
		t.Errorf("the WAL file grew from %d to %d bytes after the first transaction", first, last)
	}
}
