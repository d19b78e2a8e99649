package postgres_test

import (
	"database/sql"
	"testing"

	"github.com/idemledger/idemledger/internal/drivertest"
	"github.com/idemledger/idemledger/internal/testdb"
)

// TestDriver runs the driver conformance suite on PostgreSQL through
// database/sql. Its conflict is a serialization failure.
func TestDriver(t *testing.T) {
	drivertest.Exercise(t, func(t *testing.T) *testdb.DB[*sql.Tx] { return testdb.PostgresDB(t) }, drivertest.Hooks[*sql.Tx]{Retryable: drivertest.SerializationFailure[*sql.Tx]})
}
