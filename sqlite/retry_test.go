package sqlite

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// codeErr stands for modernc.org/sqlite's *sqlite.Error.
type codeErr int

func (e codeErr) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codeErr) Code() int     { return int(e) }

func TestRetryLocked(t *testing.T) {
	const sqliteBusySnapshot = sqliteBusy | 2<<8
	other := errors.New("not a lock")
	tests := []struct {
		name      string
		errs      []error // returned by the successive calls; nil after
		wantCalls int
		wantErr   error
	}{
		{"success", nil, 1, nil},
		{"other error, not retried", []error{other}, 1, other},
		{"constraint, not retried", []error{codeErr(19)}, 1, codeErr(19)},
		{"busy, then success", []error{codeErr(sqliteBusy), codeErr(sqliteBusy)}, 3, nil},
		{"locked, wrapped, then success", []error{fmt.Errorf("x: %w", codeErr(sqliteLocked))}, 2, nil},
		{"extended busy code, then other", []error{codeErr(sqliteBusySnapshot), other}, 2, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := retryLocked(time.Second, func() error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) {
				t.Errorf("retryLocked: %d calls, %v; want %d calls, %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

// TestRetryLockedBounded: a lock that stays taken is given up on within
// the window, with the last error.
func TestRetryLockedBounded(t *testing.T) {
	const window = 100 * time.Millisecond
	calls := 0
	start := time.Now()
	err := retryLocked(window, func() error {
		calls++
		return codeErr(sqliteBusy)
	})
	elapsed := time.Since(start)
	if !errors.Is(err, codeErr(sqliteBusy)) {
		t.Errorf("err = %v, want SQLITE_BUSY", err)
	}
	if elapsed < window-maxBackoff || elapsed > window+time.Second {
		t.Errorf("gave up after %v, want about %v", elapsed, window)
	}
	if calls < 3 {
		t.Errorf("%d calls in %v, want a few", calls, window)
	}
}
