package sqlite_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/sqlite"
)

// Open with the defaults: WAL, a busy timeout of 10 s, synchronous FULL.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var mode string
	var busy, sync int
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.QueryRow("PRAGMA busy_timeout").Scan(&busy)
	db.QueryRow("PRAGMA synchronous").Scan(&sync)
	fmt.Println(mode, busy, sqlite.Synchronous(sync))
	// Output: wal 10000 FULL
}

// Options change a setting; the fields left zero keep their defaults.
func ExampleOptions_Open() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlite.Options{Synchronous: sqlite.SynchronousNormal}.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var mode string
	var busy, sync int
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.QueryRow("PRAGMA busy_timeout").Scan(&busy)
	db.QueryRow("PRAGMA synchronous").Scan(&sync)
	fmt.Println(mode, busy, sqlite.Synchronous(sync), db.Stats().MaxOpenConnections)
	// Output: wal 10000 NORMAL 4
}
