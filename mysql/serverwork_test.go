package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/mysql"
)

// sessionCounters reads the counters named of the session of db, a pool of
// one connection.
func sessionCounters(t *testing.T, db *sql.DB, names ...string) map[string]int64 {
	t.Helper()
	out := make(map[string]int64, len(names))
	for _, name := range names {
		var k string
		var v int64
		if err := db.QueryRow("SHOW SESSION STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
			t.Fatal(name, err)
		}
		out[name] = v
	}
	return out
}

// TestMutateServerWork holds the statements of a first Mutate and of a
// replay to the cheapest the server runs for them: the claim's read makes
// no temporary table (a derived table would be materialized in one at
// every read) and a claim in a caller's transaction, which has no
// deadline for the server to check, is a plain INSERT ... VALUES rather
// than an INSERT ... SELECT. It counts the session's counters on a pool of
// one connection; it does not time anything.
func TestMutateServerWork(t *testing.T) {
	d := testdb.MySQLDB(t)
	db := d.SQL
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(time.Hour)
	if _, err := db.Exec("CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, item VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(mysql.New(db), ledger.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	fp := hash.Bytes([]byte("payload"))
	names := []string{"Created_tmp_tables", "Com_insert_select", "Com_insert"}
	// What reading the counters adds to them (SHOW STATUS makes a
	// temporary table of its own on some versions).
	a, b := sessionCounters(t, db, names...), sessionCounters(t, db, names...)
	reading := map[string]int64{}
	for _, n := range names {
		reading[n] = b[n] - a[n]
	}
	mutate := func(key string, ran *bool) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := ledger.Mutate(ctx, l, tx, ledger.Request{Key: key, Fingerprint: fp}, func(ctx context.Context) (int64, error) {
			*ran = true
			r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", key)
			if err != nil {
				return 0, err
			}
			return r.LastInsertId()
		}); err != nil {
			return err
		}
		return tx.Commit()
	}
	for _, tc := range []struct {
		name    string
		ran     bool
		inserts int64 // the claim's and the order's
	}{{"first", true, 2}, {"replay", false, 0}} {
		before := sessionCounters(t, db, names...)
		var ran bool
		if err := mutate("k", &ran); err != nil {
			t.Fatal(tc.name, err)
		}
		if ran != tc.ran {
			t.Fatalf("%s: fn ran: %v, want %v", tc.name, ran, tc.ran)
		}
		after := sessionCounters(t, db, names...)
		got := fmt.Sprintf("temporary tables %d, INSERT ... SELECT %d, INSERT %d",
			after["Created_tmp_tables"]-before["Created_tmp_tables"]-reading["Created_tmp_tables"],
			after["Com_insert_select"]-before["Com_insert_select"]-reading["Com_insert_select"],
			after["Com_insert"]-before["Com_insert"]-reading["Com_insert"])
		if want := fmt.Sprintf("temporary tables 0, INSERT ... SELECT 0, INSERT %d", tc.inserts); got != want {
			t.Errorf("%s Mutate: %s; want %s", tc.name, got, want)
		}
	}
}
