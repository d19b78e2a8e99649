package consumers_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// name returns a fresh name with prefix, for streams, subjects and queues.
func name(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// brokerURL returns the broker named by env, skipping the test without it.
func brokerURL(t *testing.T, env, example string) string {
	t.Helper()
	url := os.Getenv(env)
	if url == "" {
		t.Skipf("skipped: set %s (for example %s) to run it against the broker", env, example)
	}
	return url
}

// eventually polls cond every 20 ms until it holds or 15 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func payments(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT order_id FROM payments ORDER BY order_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

const paymentsTable = `CREATE TABLE payments (order_id TEXT PRIMARY KEY)`
