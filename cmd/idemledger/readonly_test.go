package main

import (
	"crypto/sha256"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// TestForeignFileLeftAlone: stats, inspect and purge refuse an SQLite
// file that does not hold the ledger's table, and leave it byte for byte
// as it was: another application's database in rollback-journal mode
// stays in that mode (header bytes 18 and 19), and an empty file stays
// empty. No -wal, -shm or -journal file appears next to it.
func TestForeignFileLeftAlone(t *testing.T) {
	commands := [][]string{
		{"stats", "-db"},
		{"purge", "-db"},
		{"purge", "-q", "-db"},
		{"inspect", "-key", "k", "-db"},
	}
	files := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"another application's database", func(t *testing.T, path string) {
			// The driver itself, without sqlite.Open's pragmas: the file
			// stays in rollback-journal (delete) mode.
			db, err := sql.Open(sqlite.DriverName, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{
				`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`,
				`INSERT INTO users VALUES (1, 'a')`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			var mode string
			if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "delete" {
				t.Fatalf("journal_mode = %q, %v; want delete", mode, err)
			}
		}},
		{"empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			for _, c := range commands {
				dir := t.TempDir()
				path := filepath.Join(dir, "other.db")
				f.make(t, path)
				before := checksum(t, path)
				args := append(append([]string{}, c...), path)
				r := idemledger(t, "", args...)
				r.want(t, 1)
				if !strings.Contains(r.stderr, "has no idemledger schema") {
					t.Errorf("%q: stderr %q", args, r.stderr)
				}
				if after := checksum(t, path); after != before {
					t.Errorf("%q changed the file: sha256 %x before, %x after", args, before, after)
				}
				if names := dirNames(t, dir); len(names) != 1 {
					t.Errorf("%q left the files %q", args, names)
				}
			}
		})
	}
}

// TestLedgerInWALRecognized: the read-only check for the ledger's table
// reads the write-ahead log, where a freshly migrated database holds the
// table until a checkpoint: while the application has the database open
// (its -shm exists), and from a copy of the database and its -wal alone.
func TestLedgerInWALRecognized(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		t.Fatal(err)
	}
	if err := schema.Migrate(t.Context(), sqlite.New(db)); err != nil {
		t.Fatal(err)
	}
	// The table is in the log only: the database file itself has none.
	if st, err := os.Stat(path + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("no write-ahead log: %v", err)
	}
	main := openImmutable(t, path)
	var tables int
	if err := main.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'idempotency_ledger'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the database file itself holds %d ledger tables (%v); the test needs them in the log", tables, err)
	}

	r := idemledger(t, "", "stats", "-db", path)
	r.want(t, 0)

	// A copy of the database and its log, without the -shm file.
	copyDir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, path+suffix, filepath.Join(copyDir, "app.db"+suffix))
	}
	r = idemledger(t, "", "stats", "-db", filepath.Join(copyDir, "app.db"))
	r.want(t, 0)
	if !strings.Contains(r.stdout, "in flight") {
		t.Errorf("stats on the copy: %q", r.stdout)
	}
}

func checksum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// openImmutable opens path as it is on disk, ignoring any log.
func openImmutable(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
