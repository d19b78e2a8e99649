package sqlite

import (
	"errors"
	"fmt"
	"io"
	"testing"

	idriver "github.com/idemledger/idemledger/driver"
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
	all := []error{idriver.ErrBusy, idriver.ErrRetryable, idriver.ErrNotMigrated, idriver.ErrOutcomeUnknown}
	for _, tt := range tests {
		got := interpretError(tt.err)
		if got.Error() != tt.err.Error() || !errors.Is(got, tt.err) {
			t.Errorf("%s: %v lost its text or its cause", tt.name, got)
		}
		for _, s := range all {
			want := false
			for _, w := range tt.want {
				want = want || w == s
			}
			if errors.Is(got, s) != want {
				t.Errorf("%s: errors.Is(%v, %v) = %t, want %t", tt.name, got, s, !want, want)
			}
		}
	}
	if interpretError(nil) != nil {
		t.Error("interpretError(nil) != nil")
	}
}

// noSuchTable is SQLITE_ERROR with SQLite's message for a missing table.
type noSuchTable struct{}

func (noSuchTable) Error() string { return "SQL logic error: no such table: idempotency_ledger (1)" }
func (noSuchTable) Code() int     { return sqliteError }
