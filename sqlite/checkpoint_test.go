package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWALBounded: 8 writers back to back through Open's pool never pause,
// so a checkpoint beside them never reaches the end of the WAL and SQLite
// never starts it over (the WAL grows without bound: BENCHMARKS.md, "The
// SQLite writers' gate"). The checkpoint inside the gate must: the -wal file, whose
// size is the most frames it ever held, stays within the bound. It asserts
// the file's size, not a time.
//
// The 1,000 transactions write 8 rows each at random places in a table
// without rowid, each row on a leaf of its own, with their parents and
// the splits: several times the bound in all. With the checkpoint inside
// the gate taken out, the WAL held 35,341 frames (146 MB) and the test
// failed.
func TestWALBounded(t *testing.T) {
	skipUnlessLong(t) // several times walBoundPages written through SQLite under -race
	path := filepath.Join(t.TempDir(), "wal.db")
	db := walTable(t, path, 8)
	ctx := context.Background()
	var pageSize int64
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	const (
		writers = 8
		rows    = 8    // per transaction
		value   = 1500 // bytes: two rows to a page
	)
	const each = 1000 / writers
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				if err := insertRows(ctx, db, rows, value); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// At most twice the bound (the second walBoundPages while an outside
	// checkpoint finishes, see boundCheckpoint), plus what the pool's
	// writers may append meanwhile, one transaction each.
	frames := (fi.Size() - walHeader) / (pageSize + walFrameHeader)
	most := int64(2*walBoundPages + 2*writers*rows)
	t.Logf("%d transactions of %d rows; the WAL holds at most %d frames (%d bytes); bound %d", writers*each, rows, frames, fi.Size(), most)
	if frames > most {
		t.Errorf("the WAL grew to %d frames (%d bytes), past %d: it did not start over", frames, fi.Size(), most)
	}
}

// skipUnlessLong is testdb.Long for the tests inside package sqlite, which
// cannot import testdb (it imports sqlite): it skips t unless
// IDEMLEDGER_LONG (testdb.LongEnv) is set.
func skipUnlessLong(t *testing.T) {
	t.Helper()
	if v := os.Getenv("IDEMLEDGER_LONG"); v == "" || v == "0" {
		t.Skip("a long test: set IDEMLEDGER_LONG=1 to run it (.ci/run does)")
	}
}

// The WAL file's layout (https://sqlite.org/fileformat.html#the_write_ahead_log).
const (
	walHeader      = 32
	walFrameHeader = 24
)

// insertRows inserts n rows of random keys with values of size bytes in
// one transaction.
// walTable opens an Open pool of maxConns connections (0: the default) on
// a new file at path, closed when t ends, with a table t whose random keys
// (insertRows) put every row on a page of its own, so that each
// transaction appends as many WAL frames as it has rows. It runs under
// synchronous=NORMAL: no sync at each commit, so the writers go fast and
// the tests stay short; the checkpoints work as under FULL.
func walTable(t *testing.T, path string, maxConns int) *sql.DB {
	t.Helper()
	db, err := Options{Synchronous: SynchronousNormal, MaxOpenConns: maxConns}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE t (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID"); err != nil {
		t.Fatal(err)
	}
	return db
}

func insertRows(ctx context.Context, db *sql.DB, n, size int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v := make([]byte, size)
	for range n {
		k := make([]byte, 16)
		rand.Read(k)
		if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", k, v); err != nil {
			return err
		}
	}
	return tx.Commit()
}
