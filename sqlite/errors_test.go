package sqlite

import (
	"errors"
	"fmt"
	"io"
	"testing"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/marktest"
)

// TestInterpretError: the driver marks each SQLite result code the ledger
// must tell apart with its sentinel, keeps the text and the cause, and
// leaves the others alone.
func TestInterpretError(t *testing.T) {
	noTable := fmt.Errorf("wrapped: %w", noSuchTable{})
	tests := []struct {
		name string
		err  error
		want []error // sentinels matched
	}{
		{"busy", codeErr(sqliteBusy), []error{idriver.ErrBusy, idriver.ErrRetryable}},
		{"busy snapshot (extended)", codeErr(sqliteBusy | 2<<8), []error{idriver.ErrBusy, idriver.ErrRetryable}},
		{"locked, wrapped", fmt.Errorf("x: %w", codeErr(sqliteLocked)), []error{idriver.ErrBusy, idriver.ErrRetryable}},
		{"no such table", noTable, []error{idriver.ErrNotMigrated}},
		{"other SQLITE_ERROR", codeErr(sqliteError), nil},
		{"I/O error (extended)", codeErr(sqliteIOErr | 3<<8), []error{idriver.ErrOutcomeUnknown}},
		{"full", codeErr(13), nil},
		{"constraint", codeErr(19), nil},
		{"EOF", io.ErrUnexpectedEOF, []error{idriver.ErrOutcomeUnknown}},
		{"plain", errors.New("plain"), nil},
	}
	for _, tt := range tests {
		marktest.CheckMarks(t, tt.name, tt.err, interpretError(tt.err), tt.want...)
	}
	if interpretError(nil) != nil {
		t.Error("interpretError(nil) != nil")
	}
}

// noSuchTable is SQLITE_ERROR with SQLite's message for a missing table.
type noSuchTable struct{}

func (noSuchTable) Error() string { return "SQL logic error: no such table: idempotency_ledger (1)" }
func (noSuchTable) Code() int     { return sqliteError }
