package ledger

// The disk's floor under SQLite's purge: the writes and syncs
// that deleting rows from a SQLite file must make, made to plain files with
// no SQLite and none of our logic, at a purge's pace, beside the same load.
// The load's p99 beside them is what any purge at that pace costs it on
// this disk.

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shape of the purge's writes, measured on a 1M-record file of the
// scale test's fill (a one-off probe, BENCHMARKS.md, "SQLite
// purge"): a batch deleting 74 expired rows appends 88 pages to
// the WAL, 74 of them leaves of the primary key's index, one for each row,
// since UUID keys scatter the rows' entries over the index; the rest are the
// table's, the two time indexes' and interior pages, few since those follow
// insertion. The checkpoint then copies each page to its place in the file.
const (
	diskFloorBatchRows  = 74
	diskFloorBatchPages = 88
	// diskFloorCheckpointPages is sqlite's settlePages: a purge's batches
	// wait for a checkpoint after this many pages.
	diskFloorCheckpointPages = 256
	diskFloorPage            = 4096
	diskFloorFrame           = 24 + diskFloorPage // a WAL frame: header and page
)

// diskFloor is a prepared disk floor: a scratch file as large as the
// ledger's and a scratch WAL beside it, written and synced as a purge of
// rows rows at perSecond rows/s would write and sync the ledger's.
type diskFloor struct {
	rows, perSecond int64
	db, wal         *os.File
	pages           int64 // the scratch file's size in pages
}

// parseDiskFloor reads "disk=<rows/s>" from scaleFloorEnv; ok is false for
// any other floor.
func parseDiskFloor(t *testing.T) (perSecond int64, ok bool) {
	t.Helper()
	v := os.Getenv(scaleFloorEnv)
	r, ok := strings.CutPrefix(v, "disk=")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(r, 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want disk=<rows per second>", scaleFloorEnv, v)
	}
	return n, true
}

// prepareDiskFloor writes the scratch files before the load starts (their
// writing would otherwise count against the load), or returns nil when no
// disk floor is asked for.
func prepareDiskFloor(t *testing.T, s *scaleLedger, rows int64) *diskFloor {
	t.Helper()
	perSecond, ok := parseDiskFloor(t)
	if !ok {
		return nil
	}
	if s.path == "" {
		t.Fatalf("%s: disk is SQLite's floor", scaleFloorEnv)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		t.Fatal(err)
	}
	f := &diskFloor{rows: rows, perSecond: perSecond, pages: fi.Size() / diskFloorPage}
	// Beside the ledger's file, on the same file system; written out in
	// full so that the floor's writes land on allocated blocks, as a
	// checkpoint's do.
	if f.db, err = os.Create(s.path + ".floor"); err != nil {
		t.Fatal(err)
	}
	if f.wal, err = os.Create(s.path + ".floor-wal"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.db.Close()
		f.wal.Close()
		os.Remove(f.db.Name())
		os.Remove(f.wal.Name())
	})
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(rand.Uint32())
	}
	for off := int64(0); off < fi.Size(); off += int64(len(chunk)) {
		if _, err := f.db.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.db.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

// run writes as the purge would, calling progress with the rows it stands
// for after each batch, and returns them.
func (f *diskFloor) run(t *testing.T, progress func(int64)) int64 {
	t.Helper()
	frame := make([]byte, diskFloorFrame)
	for i := range frame {
		frame[i] = byte(rand.Uint32())
	}
	batch := make([]byte, 0, diskFloorBatchPages*diskFloorFrame)
	for range diskFloorBatchPages {
		batch = append(batch, frame...)
	}
	every := time.Duration(float64(time.Second) * diskFloorBatchRows / float64(f.perSecond))
	var (
		n       int64
		walAt   int64   = 32 // past the WAL's header
		pending int          // pages in the WAL since the last checkpoint
		pages   []int64      // a checkpoint's pages
		t0      = time.Now()
	)
	for i := int64(0); n < f.rows; i++ {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * every)))
		start := time.Now()
		// The batch's COMMIT: its frames appended, the WAL synced
		// (synchronous=FULL, the default).
		if _, err := f.wal.WriteAt(batch, walAt); err != nil {
			t.Fatal(err)
		}
		if err := f.wal.Sync(); err != nil {
			t.Fatal(err)
		}
		walAt += int64(len(batch))
		pending += diskFloorBatchPages
		n += diskFloorBatchRows
		if batchDone != nil {
			batchDone(diskFloorBatchRows, time.Since(start))
		}
		// The checkpoint the next batch waits for: each page copied to a
		// place of its own in the file, in the order of the pages' numbers
		// as SQLite's checkpoint copies them, then the file synced; the
		// WAL starts over.
		if pending >= diskFloorCheckpointPages {
			pages = pages[:0]
			for range pending {
				pages = append(pages, rand.Int64N(f.pages))
			}
			slices.Sort(pages)
			for _, page := range pages {
				if _, err := f.db.WriteAt(frame[24:], page*diskFloorPage); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.db.Sync(); err != nil {
				t.Fatal(err)
			}
			pending, walAt = 0, 32
		}
		progress(n)
	}
	return n
}
