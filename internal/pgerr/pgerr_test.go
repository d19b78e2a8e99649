package pgerr

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/marktest"
)

// TestInterpret: each SQLSTATE the ledger must tell apart is marked with
// its sentinel, on a real *pgconn.PgError; text and cause are kept.
func TestInterpret(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	tests := []struct {
		name string
		err  error
		want []error
	}{
		{"serialization failure", pg("40001"), []error{driver.ErrRetryable}},
		{"deadlock", pg("40P01"), []error{driver.ErrRetryable}},
		{"undefined table", pg("42P01"), []error{driver.ErrNotMigrated}},
		{"connection failure", pg("08006"), []error{driver.ErrOutcomeUnknown}},
		{"admin shutdown", pg("57P01"), []error{driver.ErrOutcomeUnknown}},
		{"crash shutdown", pg("57P02"), []error{driver.ErrOutcomeUnknown}},
		{"cannot connect now", pg("57P03"), []error{driver.ErrOutcomeUnknown}},
		{"unique violation", pg("23505"), nil},
		{"query canceled", pg("57014"), nil},
		{"reply cut", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), []error{driver.ErrOutcomeUnknown}},
		{"plain", errors.New("plain"), nil},
	}
	for _, tt := range tests {
		marktest.CheckMarks(t, tt.name, tt.err, Interpret(tt.err), tt.want...)
	}
}
