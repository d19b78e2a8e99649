package consume_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/idemledger/idemledger/consume"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// openExampleDB opens a fresh, migrated SQLite database with a payments
// table.
func openExampleDB() (db *sql.DB, cleanup func()) {
	dir, err := os.MkdirTemp("", "idemledger-consume")
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
	if _, err := db.Exec(`CREATE TABLE payments (order_id TEXT PRIMARY KEY, cents INTEGER)`); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// A transactional consumer: the payment row, the record of the message and
// its Output commit together. The broker delivers the message twice (its
// acknowledgement was lost); the second delivery is acknowledged with the
// same Output, to be published again, and the payment is made once. The
// same ID with another payload goes to the dead-letter path.
func ExampleConsumer_HandleTx() {
	db, cleanup := openExampleDB()
	defer cleanup()
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: "payments-queue"})
	if err != nil {
		log.Fatal(err)
	}
	pay := func(ctx context.Context, tx *sql.Tx, msg consume.Message) (consume.Output, error) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO payments VALUES (?, 1250)`, string(msg.Payload)); err != nil {
			return consume.Output{}, err
		}
		return consume.Output{Publish: []consume.Outgoing{
			{ID: "paid-" + msg.ID, Topic: "payments.paid", Payload: msg.Payload},
		}}, nil
	}

	msg := consume.Message{ID: "m-1", Payload: []byte("order-42")}
	for range 2 {
		d := c.HandleTx(context.Background(), msg, pay)
		fmt.Println(d.Action, d.Replayed, d.Output.Publish[0].ID)
	}
	msg.Payload = []byte("order-43")
	d := c.HandleTx(context.Background(), msg, pay)
	fmt.Println(d.Action, d.Err)

	var n int
	db.QueryRow(`SELECT count(*) FROM payments`).Scan(&n)
	fmt.Println("payments:", n)
	// Output:
	// ack false paid-m-1
	// ack true paid-m-1
	// dead_letter consume: dead letter: key_reused: ledger: idempotency key reused with a different fingerprint
	// payments: 1
}

// Lease mode, for an effect outside the database: Commit marks the point
// after which the effect must not be made again, so a failure after it is
// kept and the message goes to the dead-letter path, not back to the
// handler; once: a copy delivered again is acknowledged, unrun.
func ExampleCommit() {
	db, cleanup := openExampleDB()
	defer cleanup()
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	c, err := consume.New(l, consume.Options{Scope: "mailer"})
	if err != nil {
		log.Fatal(err)
	}
	sent := 0
	send := func(ctx context.Context, msg consume.Message) (consume.Output, error) {
		sent++ // the e-mail leaves
		consume.Commit(ctx)
		return consume.Output{}, fmt.Errorf("mail server receipt unreadable")
	}
	msg := consume.Message{ID: "welcome-7", Payload: []byte("to: ada@example.com")}
	for range 2 {
		d := c.Handle(context.Background(), msg, send)
		fmt.Println(d.Action, d.Err)
	}
	fmt.Println("sent:", sent)
	// Output:
	// dead_letter consume: dead letter: failed_after_commit_point: mail server receipt unreadable
	// ack <nil>
	// sent: 1
}
