package ledger_test

import (
	"context"
	"fmt"
	"log"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// With Config.DB the ledger prepares its statements once, on the pool that
// the application's transactions come from, and reuses them in each of
// those transactions. Migrate before New; close the Ledger before the pool.
func ExampleConfig_preparedStatements() {
	db, cleanup := openExampleDB() // migrated
	defer cleanup()
	l, err := ledger.New(ledger.Config{DB: db})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()

	for range 2 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		req := ledger.Request{Scope: "user-42", Key: "order-1", Fingerprint: hash.Bytes([]byte("book"))}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
			r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES ('book')")
			if err != nil {
				return 0, err
			}
			return r.LastInsertId()
		})
		if err != nil {
			log.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
		fmt.Println("order", res.Value, "replayed:", res.Replayed)
	}
	// Output:
	// order 1 replayed: false
	// order 1 replayed: true
}
