package mysql_test

import (
	"database/sql"
	"testing"

	"github.com/idemledger/idemledger/internal/drivertest"
	"github.com/idemledger/idemledger/internal/testdb"
)

// TestDriver runs the driver conformance suite on MySQL (MariaDB here).
// Its conflict is a deadlock.
func TestDriver(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) *testdb.DB[*sql.Tx] { return testdb.MySQLDB(t) }, drivertest.Hooks[*sql.Tx]{})
}
