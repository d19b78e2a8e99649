package sqlite_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlite.Open(filepath.Join(dir, "app.db"), sqlite.WithSynchronous(sqlite.SynchronousNormal))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	var mode string
	var sync int
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.QueryRow("PRAGMA synchronous").Scan(&sync)
	fmt.Println(mode, sqlite.Synchronous(sync))
	// Output: wal NORMAL
}
