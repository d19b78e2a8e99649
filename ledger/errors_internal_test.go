package ledger

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestOpErrorText: an operation's error names the package once, whatever
// its cause, and the cause stays reachable with errors.Is and errors.As.
func TestOpErrorText(t *testing.T) {
	driver := errors.New("database is locked (5) (SQLITE_BUSY)")
	inFlight := &InFlightError{RetryAfter: 1500 * time.Millisecond}
	tests := []struct {
		op     string
		cause  error
		want   string
		target error
	}{
		{"get", ErrNotFound, "ledger: get: record not found", ErrNotFound},
		{"claim", &retryableError{err: driver}, "ledger: claim: retryable: database is locked (5) (SQLITE_BUSY)", ErrRetryable},
		{"purge", &retryableError{err: driver}, "ledger: purge: retryable: database is locked (5) (SQLITE_BUSY)", driver},
		{"complete", ErrLeaseLost, "ledger: complete: lease lost", ErrLeaseLost},
		{"release", fmt.Errorf("%w: the claim is a replay and holds no lease", ErrLeaseLost), "ledger: release: lease lost: the claim is a replay and holds no lease", ErrLeaseLost},
		{"claim", ErrKeyReused, "ledger: claim: idempotency key reused with a different fingerprint", ErrKeyReused},
		{"claim", inFlight, "ledger: claim: idempotency key in flight; retry after 1.5s", ErrInFlight},
		{"extend", invalidRequest("nil claim"), "ledger: extend: invalid request: nil claim", ErrInvalidRequest},
		{"stats", driver, "ledger: stats: database is locked (5) (SQLITE_BUSY)", driver},
		// Only a leading "ledger: " is dropped.
		{"get", errors.New("no ledger: here"), "ledger: get: no ledger: here", nil},
	}
	for _, tt := range tests {
		err := wrapOp(tt.op, tt.cause)
		if got := err.Error(); got != tt.want {
			t.Errorf("wrapOp(%q, %q) = %q, want %q", tt.op, tt.cause, got, tt.want)
		}
		if !errors.Is(err, tt.cause) || (tt.target != nil && !errors.Is(err, tt.target)) {
			t.Errorf("wrapOp(%q, %q) does not match its cause", tt.op, tt.cause)
		}
	}
	var ife *InFlightError
	if err := wrapOp("claim", inFlight); !errors.As(err, &ife) || ife.RetryAfter != 1500*time.Millisecond {
		t.Errorf("errors.As(*InFlightError) through wrapOp = %v", ife)
	}
}
