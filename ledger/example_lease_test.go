package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

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

// A handler that charges a card marks its commit point right after the
// charge. Should its process die before Complete, a retry past the lease
// is told the charge was made (ErrCommitted) instead of charging again;
// a retry that asks to recover runs knowing it, and looks the charge up.
func ExampleLedger_Commit() {
	db, cleanup := openExampleDB()
	defer cleanup()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	l, _ := ledger.New(sqlite.New(db), ledger.Options{Lease: time.Minute, Now: func() time.Time { return now }})
	defer l.Close()
	ctx := context.Background()
	req := ledger.Request{Scope: "user-42", Key: "charge-21", Fingerprint: hash.Bytes([]byte("charge 10 EUR"))}

	c, err := l.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	// ... the payment API charged the card ...
	if err := l.Commit(ctx, c); err != nil {
		log.Fatal(err)
	}
	// The process dies here: no Complete. A minute later the lease has
	// run out.
	now = now.Add(2 * time.Minute)

	_, err = l.Claim(ctx, req)
	var committed *ledger.CommittedError
	if errors.As(err, &committed) {
		fmt.Println("charged under fence", committed.Fence, "at", committed.CommittedAt.Format(time.TimeOnly), "- answer lost")
	}

	req.Recover = true
	r, err := l.Claim(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("recovering under fence", r.Fence, "- look the charge up, committed at", r.CommittedAt.Format(time.TimeOnly))
	if err := l.Complete(ctx, r, ledger.Outcome{Status: http.StatusCreated, Body: []byte("charged")}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// charged under fence 1 at 09:00:00 - answer lost
	// recovering under fence 2 - look the charge up, committed at 09:00:00
}
