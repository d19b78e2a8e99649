package pgxv5_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/pgxv5"
	"github.com/idemledger/idemledger/schema"
)

func TestMain(m *testing.M) { os.Exit(testdb.RunExamplesWithServer(m)) }

// TestExamplesServer checks that the Examples' server answers, and makes
// the test cache see IDEMLEDGER_TEST_POSTGRES (see RunExamplesWithServer).
func TestExamplesServer(t *testing.T) { testdb.ExamplesServer(t) }

// The ledger inside a pgx transaction from a pgxpool.Pool: the order and
// the ledger record commit together, and a retry replays the first order.
// It runs against the server named by IDEMLEDGER_TEST_POSTGRES.
func ExampleNew() {
	url, drop := testdb.ExampleURL() // a fresh schema on the test server
	defer drop()
	ctx := context.Background()

	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	d := pgxv5.New(pool)
	if err := schema.Migrate(ctx, d); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text)`); err != nil {
		log.Fatal(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	placeOrder := func(key, item string) (ledger.Result[int64], error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return ledger.Result[int64]{}, err
		}
		defer tx.Rollback(ctx)
		req := ledger.Request{Scope: "user-42", Key: key, Fingerprint: hash.Bytes([]byte(item))}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
			var id int64
			err := tx.QueryRow(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item).Scan(&id)
			return id, err
		})
		if err != nil {
			return res, err
		}
		return res, tx.Commit(ctx)
	}

	first, err := placeOrder("order-7f3a", "book")
	if err != nil {
		log.Fatal(err)
	}
	retry, _ := placeOrder("order-7f3a", "book")
	_, err = placeOrder("order-7f3a", "pen")
	fmt.Println("first: order", first.Value, "replayed:", first.Replayed)
	fmt.Println("retry: order", retry.Value, "replayed:", retry.Replayed)
	fmt.Println("same key, other payload:", errors.Is(err, ledger.ErrKeyReused))
	var _ pgx.Tx // the transactions Mutate takes here
	// Output:
	// first: order 1 replayed: false
	// retry: order 1 replayed: true
	// same key, other payload: true
}
