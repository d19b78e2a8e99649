package sqlite_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/drivertest"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/sqlite"
)

// TestDriver runs the driver conformance suite on SQLite. Its conflict is
// a write lock held past busy_timeout by another connection.
func TestDriver(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) *testdb.DB[*sql.Tx] {
		return testdb.SQLiteDB(t, sqlite.Options{})
	}, drivertest.Hooks[*sql.Tx]{Retryable: func(t *testing.T, d *testdb.DB[*sql.Tx]) error {
		holder := d.Begin(t) // BEGIN IMMEDIATE: the write lock
		defer d.Rollback(t, holder)
		db, err := sqlite.Options{BusyTimeout: time.Millisecond}.Open(d.Source)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = sqlite.New(db).Begin(context.Background())
		return err
	}})
}
