package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// TestPreparedStatements: the driver prepares its statements on its pool
// when the ledger is built, and Mutate works with them in a transaction of
// that pool, falls back to unprepared statements in a transaction of
// another pool on the same file (whose statements a *sql.Tx refuses), and
// still works once Close has released them; a second Close is nil.
func TestPreparedStatements(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "prep.db")
	open := func() *sql.DB {
		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db, other := open(), open()
	d := sqlite.New(db)
	if err := schema.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(pool *sql.DB, key string) ledger.Result[string] {
		t.Helper()
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		req := ledger.Request{Scope: "s", Key: key, Fingerprint: hash.Bytes([]byte(key))}
		res, err := ledger.Mutate(ctx, l, tx, req, func(context.Context) (string, error) { return "v-" + key, nil })
		if err != nil {
			t.Fatalf("Mutate %s: %v", key, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		name     string
		pool     *sql.DB
		key      string
		replayed bool
	}{
		{"the driver's pool", db, "a", false},
		{"the driver's pool, again", db, "a", true},
		{"another pool on the file", other, "b", false},
		{"another pool, replay of the first pool's record", other, "a", true},
	}
	for _, s := range steps {
		if res := mutate(s.pool, s.key); res.Value != "v-"+s.key || res.Replayed != s.replayed {
			t.Fatalf("%s: %+v, want v-%s replayed %v", s.name, res, s.key, s.replayed)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if res := mutate(db, "c"); res.Value != "v-c" || res.Replayed {
		t.Fatalf("after Close: %+v", res)
	}
	if r, err := l.Get(ctx, "s", "b"); err != nil || r.State != ledger.StateCompleted {
		t.Fatalf("Get after Close: %+v, %v", r, err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
