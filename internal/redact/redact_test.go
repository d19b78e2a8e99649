package redact

import (
	"errors"
	"fmt"
	"testing"

	"github.com/idemledger/idemledger/ledger"
)

// TestRedact: every whole-word occurrence of the key or the scope is
// blotted out of an error's text, whatever their length; words that only
// contain them are left alone. The rule is idemgrpc's.
func TestRedact(t *testing.T) {
	tests := []struct {
		name, key, scope, msg, want string
	}{
		{"driver error quoting both", "key-1", "tenant-9", `UNIQUE constraint failed: ("tenant-9", "key-1"); key-1 again`,
			`UNIQUE constraint failed: ("[redacted]", "[redacted]"); [redacted] again`},
		{"one byte", "k", "t", `pq: duplicate key (scope, key)=(t, k) in "k"`,
			`pq: duplicate key (scope, key)=([redacted], [redacted]) in "[redacted]"`},
		{"one-byte scope in words", "k", "s", "sql: database is closed", "sql: database is closed"},
		{"digits", "k", "42", "user 42 not found in 4242", "user [redacted] not found in 4242"},
		{"dashed key", "k-1", "s", `key "k-1" and k-1, k-10`, `key "[redacted]" and [redacted], k-10`},
		{"ten bytes", "order-4242", "tenant-007", "(tenant-007,order-4242)", "([redacted],[redacted])"},
		{"two bytes", "k7", "t1", "row t1/k7: k7k7 t1x k7", "row [redacted]/[redacted]: k7k7 t1x [redacted]"},
		{"at both ends", "k", "s", "k s", "[redacted] [redacted]"},
		{"inside a longer word", "aa", "bb", "aaa bbb", "aaa bbb"},
		{"a key named like the blot", "redacted", "s", "redacted s", "[redacted] [redacted]"},
		{"nothing to blot", "K", "S", "ledger: lease lost", "ledger: lease lost"},
		{"whole message", "abc", "s", "abc", "[redacted]"},
		{"inside a longer word", "abc", "s", "abcabc", "abcabc"},
		{"adjacent occurrences merge", "a a", "z", "a a a", "[redacted]"},
		{"overlapping occurrences merge", "k:k", "z", "k:k:k", "[redacted]"},
		{"edge that is not a word byte", "-1", "s", "a-1 b-1c", "a[redacted] b-1c"},
		{"multi-byte scope", "k", "é", "café é", "café [redacted]"},
		{"empty scope", "k", "", "no scope, key k", "no scope, key [redacted]"},
		{"nothing to blot", "K", "S", "ledger: lease lost", "ledger: lease lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Error(errors.New(tt.msg), tt.key, tt.scope).Error(); got != tt.want {
				t.Errorf("Error(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// secretError is a driver's typed error that holds the key in a field.
type secretError struct{ key string }

func (e *secretError) Error() string { return "constraint violated" }

// TestRedactChain: errors.Is sees through a redacted error (an observer
// may still tell ledger.ErrBusy apart), errors.As and Unwrap do not, since
// what they would reach may hold the key.
func TestRedactChain(t *testing.T) {
	err := Error(fmt.Errorf("complete k: %w (%w)", ledger.ErrBusy, &secretError{"k"}), "k", "s")
	if got, want := err.Error(), "complete [redacted]: ledger: busy (constraint violated)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, ledger.ErrBusy) {
		t.Error("errors.Is(ErrBusy) = false, want true")
	}
	var se *secretError
	if errors.As(err, &se) || errors.Unwrap(err) != nil {
		t.Error("the original error is reachable")
	}
}
