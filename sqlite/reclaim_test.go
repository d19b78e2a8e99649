package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestPurgeGivesSpaceBack: a file made by Open has incremental auto-vacuum,
// so after Purge (which reclaims) the file is smaller and its WAL empty; a
// file made before (auto_vacuum NONE) keeps its size until one full
// Reclaim, after which it has incremental auto-vacuum too.
func TestPurgeGivesSpaceBack(t *testing.T) {
	for _, tt := range []struct {
		name string
		old  bool // the file predates incremental auto-vacuum
	}{{"new file", false}, {"file from before", true}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "ledger.db")
			db, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if tt.old {
				if _, err := db.Exec("PRAGMA auto_vacuum = NONE; VACUUM"); err != nil {
					t.Fatal(err)
				}
			}
			if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			l, err := ledger.New(sqlite.New(db), ledger.Options{TTL: time.Hour, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// About 1.2 MB of records, 1 MB of them expired: far more
			// than the schema's own pages.
			testdb.FillSQLite(t, db, testdb.Fill{Records: 600, Expired: 500, Now: now.UnixMilli(), Body: 2000})
			// The pool copies the WAL into the file in the background
			// (see the package doc): copy it all now, so that the
			// file's size is the records'.
			if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				t.Fatal(err)
			}
			before := fileSize(t, path)
			n, err := l.Purge(ctx, ledger.PurgeOptions{})
			if err != nil || n != 500 {
				t.Fatalf("Purge = %d, %v", n, err)
			}
			after, wal := fileSize(t, path), fileSize(t, path+"-wal")
			if tt.old {
				if after < before {
					t.Errorf("file %d -> %d bytes: a file without auto-vacuum does not shrink", before, after)
				}
				r, err := l.Reclaim(ctx, ledger.ReclaimOptions{Full: true})
				if err != nil {
					t.Fatal(err)
				}
				after = fileSize(t, path)
				var mode int
				if err := db.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
					t.Errorf("auto_vacuum after a full Reclaim = %d, %v; want 2 (incremental)", mode, err)
				}
				if r.After >= r.Before {
					t.Errorf("Reclaim = %+v, want smaller after", r)
				}
			}
			if after*3 > before {
				t.Errorf("file %d -> %d bytes, want it to give most of the purged records' space back", before, after)
			}
			if wal = fileSize(t, path+"-wal"); wal != 0 {
				t.Errorf("WAL %d bytes after the purge, want it truncated", wal)
			}
		})
	}
}
