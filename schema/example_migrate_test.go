package schema_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

func ExampleMigrate() {
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

	// Safe to run at every start: a no-op once up to date.
	for range 2 {
		if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
			log.Fatal(err)
		}
	}
	var version int
	db.QueryRow("SELECT version FROM " + schema.MigrationsTable).Scan(&version)
	fmt.Println("idemledger schema version", version)
	// Output: idemledger schema version 9
}
