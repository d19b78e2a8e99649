package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"
)

// The lease mode guards an effect outside the database, such as a call to
// a payment API: claim (committed at once), do the work, then complete.
func ExampleLedger_Claim() {
	db, cleanup := openExampleDB()
	defer cleanup()
	l, _ := ledger.New(sqlite.New(db), ledger.Options{})
	defer l.Close()
	ctx := context.Background()
	req := ledger.Request{Scope: "user-42", Key: "charge-19", Fingerprint: hash.Bytes([]byte("charge 10 EUR"))}

	charge := func() string {
		c, err := l.Claim(ctx, req)
		var inflight *ledger.InFlightError
		switch {
		case errors.As(err, &inflight):
			return "409, retry later"
		case err != nil:
			return err.Error()
		case c.Replayed():
			return fmt.Sprintf("%d %s (replayed)", c.Replay.Outcome.Status, c.Replay.Outcome.Body)
		}
		// ... call the payment API here, holding the lease ...
		out := ledger.Outcome{Status: http.StatusCreated, Body: []byte("charged")}
		if err := l.Complete(ctx, c, out); err != nil {
			return err.Error() // ErrLeaseLost: another request took over
		}
		return fmt.Sprintf("%d %s (fence %d)", out.Status, out.Body, c.Fence)
	}

	fmt.Println(charge())
	fmt.Println(charge())

	// While a claim is held, a duplicate is told to come back later.
	other := req
	other.Key = "charge-20"
	if _, err := l.Claim(ctx, other); err != nil {
		log.Fatal(err)
	}
	_, err := l.Claim(ctx, other)
	fmt.Println(errors.Is(err, ledger.ErrInFlight))
	// Output:
	// 201 charged (fence 1)
	// 201 charged (replayed)
	// true
}
