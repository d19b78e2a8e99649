package lifecycle_test

import (
	"context"
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

// A transport in a few lines: each request is decided, the verdict is
// mapped to the transport's answer, and a claimed run ends with the
// handler's outcome stored. Here the "wire" is a string.
func ExampleDecide() {
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
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	serve := func(key, body string) string {
		req := ledger.Request{Scope: "tenant-1", Key: key, Fingerprint: hash.Bytes([]byte(body))}
		d := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		switch d.Verdict {
		case lifecycle.Replayed:
			return "replayed: " + string(d.Outcome.Body)
		case lifecycle.Refused:
			return "refused: " + d.Refusal.Why.String()
		case lifecycle.Unprotected:
			return "unprotected"
		}
		run := d.Run
		_ = run.Context(ctx) // the handler's context: cancelled if the lease is lost
		answer := "paid " + body
		run.Stop()
		run.Complete(ledger.Outcome{Kind: "example", Body: []byte(answer)}, "", lifecycle.NoStatus, nil)
		return answer
	}
	fmt.Println(serve("k1", "10 EUR"))
	fmt.Println(serve("k1", "10 EUR"))
	fmt.Println(serve("k1", "99 EUR"))
	// Output:
	// paid 10 EUR
	// replayed: paid 10 EUR
	// refused: key_reused
}
