package sqlite

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// TestVerifyMismatch feeds verify a pool whose DSN differs from the settings
// it is told to expect, as if the driver had ignored a parameter.
func TestVerifyMismatch(t *testing.T) {
	full, _ := Options{}.resolve()
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"journal mode", "_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)",
			`sqlite: setting did not take effect: journal_mode is "delete", want "wal"`},
		{"busy timeout", "_pragma=busy_timeout(10)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
			"sqlite: setting did not take effect: busy_timeout is 10 ms, want 10000"},
		{"synchronous", "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)",
			"sqlite: setting did not take effect: synchronous is NORMAL, want FULL"},
		{"automatic checkpoint", "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
			"sqlite: setting did not take effect: wal_autocheckpoint is 1000 pages, want 0 (the pool checkpoints the WAL itself)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sql.Open(DriverName, "file:"+filepath.Join(t.TempDir(), "a.db")+"?"+tt.query)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = verify(db, full)
			if !errors.Is(err, ErrPragmaMismatch) || err.Error() != tt.want {
				t.Errorf("verify = %v, want %q", err, tt.want)
			}
		})
	}
}
