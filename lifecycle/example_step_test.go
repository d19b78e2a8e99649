package lifecycle_test

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
	"github.com/idemledger/idemledger/lifecycle"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// payments stands for a payment provider that takes idempotency keys: a
// charge made again with a key it has seen returns the first charge.
type payments struct{ charges map[string]string }

func (p *payments) Charge(key string, cents int) string {
	if id, ok := p.charges[key]; ok {
		return id
	}
	id := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[key] = id
	return id
}

// Rocket Rides, after Brandur Leach's "Implementing Stripe-like
// Idempotency Keys in Postgres": a ride request books a ride in the
// application's database, charges the card, and mails a receipt; each is
// a step. The mail service fails on the first attempt: the retry resumes
// after the recorded steps, so the ride is not booked twice nor the card
// charged twice.
func ExampleRun_Step() {
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
	if _, err := db.Exec(`CREATE TABLE rides (id INTEGER PRIMARY KEY, rider TEXT)`); err != nil {
		log.Fatal(err)
	}
	l, err := ledger.New(sqlite.New(db), ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	stripe := &payments{charges: map[string]string{}}
	mails, mailDown := 0, true

	// handle serves one ride request under run.
	handle := func(ctx context.Context, run *lifecycle.Run) (string, error) {
		// Recovery point "ride_created": the ride and its record commit
		// together.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "", err
		}
		defer tx.Rollback()
		ride, err := lifecycle.StepTx(ctx, run, l, tx, "ride", func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
			res, err := tx.ExecContext(ctx, `INSERT INTO rides (rider) VALUES ('ann')`)
			if err != nil {
				return nil, err
			}
			id, err := res.LastInsertId()
			return fmt.Appendf(nil, "ride %d", id), err
		})
		if err != nil {
			return "", err
		}
		if err := tx.Commit(); err != nil {
			return "", err
		}
		// Recovery point "charge_created": the provider gets a key
		// derived from the request's and the step's name.
		charge, err := run.Step(ctx, "charge", func(ctx context.Context, key string) ([]byte, error) {
			return []byte(stripe.Charge(key, 2000)), nil
		})
		if err != nil {
			return "", err
		}
		_, err = run.Step(ctx, "receipt", func(ctx context.Context, key string) ([]byte, error) {
			if mailDown {
				mailDown = false
				return nil, errors.New("mail service down")
			}
			mails++
			return nil, nil
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s charged %s, receipt sent", ride, charge), nil
	}

	req := ledger.Request{Scope: "rider-ann", Key: "ride-2026-01-02", Fingerprint: hash.Bytes([]byte(`{"to":"station"}`))}
	for attempt := 1; attempt <= 3; attempt++ {
		d := lifecycle.Decide(ctx, l, req, lifecycle.Config{})
		switch d.Verdict {
		case lifecycle.Replayed:
			fmt.Printf("attempt %d: replayed %d %s\n", attempt, d.Outcome.Status, d.Outcome.Body)
			continue
		case lifecycle.Refused:
			fmt.Printf("attempt %d: refused, %s\n", attempt, d.Refusal.Why)
			continue
		}
		answer, err := handle(d.Run.Context(ctx), d.Run)
		d.Run.Stop()
		if err != nil {
			// Recovery point "started" is where a release leaves the key:
			// the next attempt runs the handler again, and its recorded
			// steps return without running.
			d.Run.Release("failed", 503)
			fmt.Printf("attempt %d: 503 %v\n", attempt, err)
			continue
		}
		// Recovery point "finished": the answer is stored, the steps
		// deleted.
		d.Run.Complete(ledger.Outcome{Kind: "ride", Status: 201, Body: []byte(answer)}, "", 201, nil)
		fmt.Printf("attempt %d: 201 %s\n", attempt, answer)
	}
	var rides int
	if err := db.QueryRow(`SELECT count(*) FROM rides`).Scan(&rides); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rides %d, charges %d, receipts %d\n", rides, len(stripe.charges), mails)
	// Output:
	// attempt 1: 503 mail service down
	// attempt 2: 201 ride 1 charged ch_1, receipt sent
	// attempt 3: replayed 201 ride 1 charged ch_1, receipt sent
	// rides 1, charges 1, receipts 1
}
