package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/postgres"
	"github.com/idemledger/idemledger/schema"
)

func TestMain(m *testing.M) { os.Exit(testdb.RunExamplesWithServer(m)) }

// TestExamplesServer checks that the Examples' server answers, and makes
// the test cache see IDEMLEDGER_TEST_POSTGRES (see RunExamplesWithServer).
func TestExamplesServer(t *testing.T) { testdb.ExamplesServer(t) }

// The ledger inside a database/sql transaction on PostgreSQL (pgx's
// stdlib driver, registered as "pgx" by this package). It runs against the
// server named by IDEMLEDGER_TEST_POSTGRES.
func ExampleNew() {
	url, drop := testdb.ExampleURL() // a fresh schema on the test server
	defer drop()
	ctx := context.Background()

	db, err := sql.Open("pgx", url)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	d := postgres.New(db)
	if err := schema.Migrate(ctx, d); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, item text)`); err != nil {
		log.Fatal(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	for range 2 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		req := ledger.Request{Scope: "user-42", Key: "order-1", Fingerprint: hash.Bytes([]byte("book"))}
		res, err := ledger.Mutate(ctx, l, tx, req, func(ctx context.Context) (int64, error) {
			var id int64
			err := tx.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", "book").Scan(&id)
			return id, err
		})
		if err != nil {
			log.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
		fmt.Println("order", res.Value, "replayed:", res.Replayed)
	}
	// Output:
	// order 1 replayed: false
	// order 1 replayed: true
}
