package idemwatermill_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/idemwatermill"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// The transactional handler, called here as a router would call it: the
// second delivery of the message (its ack was lost) is answered from the
// record, and returns the message the first run produced, with its UUID,
// for the router to publish again. In a router:
//
//	poison, _ := middleware.PoisonQueueWithFilter(pub, "orders.dead", idemwatermill.IsDeadLetter)
//	router.AddMiddleware(middleware.Recoverer, poison)
//	router.AddHandler("ship", "orders", sub, "shipments", pub, idemwatermill.TxHandler(c, ship))
func ExampleTxHandler() {
	dir, _ := os.MkdirTemp("", "idemwatermill")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := schema.Migrate(context.Background(), sqlite.New(db)); err != nil {
		log.Fatal(err)
	}
	db.Exec(`CREATE TABLE shipments (order_id TEXT PRIMARY KEY)`)
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: "orders/ship"})
	if err != nil {
		log.Fatal(err)
	}

	ship := idemwatermill.TxHandler(c, func(msg *message.Message, tx *sql.Tx) ([]*message.Message, error) {
		fmt.Println("shipping", string(msg.Payload))
		if _, err := tx.Exec(`INSERT INTO shipments VALUES (?)`, string(msg.Payload)); err != nil {
			return nil, err
		}
		return []*message.Message{message.NewMessage("shipped-1", msg.Payload)}, nil
	})
	msg := message.NewMessage("3f7c9a5e-order-42", []byte("order-42"))
	for range 2 {
		out, err := ship(msg.Copy())
		fmt.Println(out[0].UUID, err)
	}
	// Output:
	// shipping order-42
	// shipped-1 <nil>
	// shipped-1 <nil>
}
