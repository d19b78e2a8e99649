package idemhttp_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
)

// A handler whose only effect is a database write runs exactly once per
// key: the write, the ledger record and the stored answer commit together.
func ExampleTxHandler() {
	l, db, cleanup := openLedger(ledger.Options{})
	defer cleanup()
	if _, err := db.Exec(`CREATE TABLE transfers (id INTEGER PRIMARY KEY, amount INTEGER)`); err != nil {
		panic(err)
	}

	h := idemhttp.TxHandler(l, idemhttp.Options{Scope: tenant},
		func(w http.ResponseWriter, r *http.Request, tx *sql.Tx) {
			amount, _ := io.ReadAll(r.Body)
			res, err := tx.ExecContext(r.Context(), `INSERT INTO transfers (amount) VALUES (?)`, string(amount))
			if err != nil {
				http.Error(w, "database error", http.StatusInternalServerError) // rolled back
				return
			}
			id, _ := res.LastInsertId()
			w.Header().Set("Location", "/transfers/"+strconv.FormatInt(id, 10))
			w.WriteHeader(http.StatusCreated)
		})
	srv := httptest.NewServer(h)
	defer srv.Close()

	for range 3 {
		send(srv.URL, "POST", "250", "transfer-9", "Location", "Idempotent-Replayed")
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM transfers`).Scan(&n)
	fmt.Println("transfers:", n)
	// Output:
	// 201 Location=/transfers/1
	// 201 Location=/transfers/1 Idempotent-Replayed=true
	// 201 Location=/transfers/1 Idempotent-Replayed=true
	// transfers: 1
}
