package mysql_test

import (
	"context"
	"database/sql"
	"log"

	_ "github.com/go-sql-driver/mysql" // registers "mysql" (package mysql imports it too)

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
	"github.com/idemledger/idemledger/schema"
)

// Mutate inside your own MySQL transaction: the record lives in your
// database and commits with your writes. (Compiled, not run: it needs a
// server.)
func ExampleNew() {
	ctx := context.Background()
	item := "book"
	req := ledger.Request{Scope: "user-42", Key: "order-7f3a", Fingerprint: hash.Bytes([]byte(item))}

	db, err := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/shop")
	if err != nil {
		log.Fatal(err)
	}
	d := mysql.New(db)
	if err := schema.Migrate(ctx, d); err != nil { // no multiStatements needed; safe on every replica (GET_LOCK)
		log.Fatal(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	tx, err := db.BeginTx(ctx, nil) // your *sql.Tx
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
		r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
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
	log.Println("order", res.Value, "replayed:", res.Replayed)
}
