package lifecycle_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/lifecycle"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// A transport in transaction mode: the handler's writes, the ledger's
// record and the answer commit together, and a retry is answered from the
// record. Here the "wire" is a string and the handler inserts an order.
func ExampleDecideTx() {
	dir, err := os.MkdirTemp("", "idemledger-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := schema.Migrate(ctx, sqlite.New(db)); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, amount TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	serve := func(key, body string) string {
		req := ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: hash.Bytes([]byte(body))}
		d := lifecycle.DecideTx(ctx, l, req, func(ctx context.Context, tx *sql.Tx) (ledger.Outcome, error) {
			res, err := tx.ExecContext(ctx, `INSERT INTO orders (amount) VALUES (?)`, body)
			if err != nil {
				return ledger.Outcome{}, err
			}
			id, _ := res.LastInsertId()
			return ledger.Outcome{Kind: "example", Body: fmt.Appendf(nil, "order %d", id)}, nil
		})
		switch {
		case d.Verdict == lifecycle.Replayed:
			return "replayed: " + string(d.Outcome.Body)
		case d.Verdict == lifecycle.Refused:
			return "refused: " + d.Refusal.Why.String()
		case d.Err != nil:
			return "failed, nothing kept: " + d.Err.Error()
		}
		return string(d.Outcome.Body)
	}
	fmt.Println(serve("k1", "10 EUR"))
	fmt.Println(serve("k1", "10 EUR"))
	fmt.Println(serve("k1", "99 EUR"))
	fmt.Println(serve("k2", "5 EUR"))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM orders`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "orders")
	// Output:
	// order 1
	// replayed: order 1
	// refused: key_reused
	// order 2
	// 2 orders
}
