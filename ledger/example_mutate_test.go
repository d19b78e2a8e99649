package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// openExampleDB opens a fresh, migrated database with an orders table.
func openExampleDB() (db *sql.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "idemledger-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err = sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)`); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

func ExampleMutate() {
	db, cleanup := openExampleDB()
	defer cleanup()
	l, err := ledger.New(sqlite.New(db), ledger.Options{}) // statements prepared once on db
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()

	placeOrder := func(key, item string) (ledger.Result[int64], error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return ledger.Result[int64]{}, err
		}
		defer tx.Rollback()
		req := ledger.Request{Scope: "user-42", Key: key, Fingerprint: hash.Bytes([]byte(item))}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
			r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
			if err != nil {
				return 0, err
			}
			return r.LastInsertId()
		})
		if err != nil {
			return res, err
		}
		return res, tx.Commit()
	}

	first, _ := placeOrder("order-7f3a", "book")
	retry, _ := placeOrder("order-7f3a", "book")
	_, err = placeOrder("order-7f3a", "pen")
	fmt.Println("first: order", first.Value, "replayed:", first.Replayed)
	fmt.Println("retry: order", retry.Value, "replayed:", retry.Replayed)
	fmt.Println("same key, other payload:", errors.Is(err, ledger.ErrKeyReused))
	// Output:
	// first: order 1 replayed: false
	// retry: order 1 replayed: true
	// same key, other payload: true
}

// MutateOutcome stores an answer as it is, the way lease mode does, so a
// record made in one mode replays in the other.
func ExampleMutateOutcome() {
	db, cleanup := openExampleDB()
	defer cleanup()
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	req := ledger.Request{Scope: "user-42", Key: "order-9c1e", Fingerprint: hash.Bytes([]byte("book"))}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := ledger.MutateOutcome(ctx, l, tx, req, func(ctx context.Context) (ledger.Outcome, error) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", "book"); err != nil {
			return ledger.Outcome{}, err
		}
		return ledger.Outcome{Status: 201, Body: []byte(`{"id":1}`)}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("first:", res.Value.Status, string(res.Value.Body), "replayed:", res.Replayed)

	// A lease-mode claim of the same request replays the stored answer.
	c, err := l.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claim:", c.Replay.Outcome.Status, string(c.Replay.Outcome.Body), "replayed:", c.Replayed())
	// Output:
	// first: 201 {"id":1} replayed: false
	// claim: 201 {"id":1} replayed: true
}
