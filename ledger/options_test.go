package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"

	"github.com/idemledger/idemledger/sqlite"

	"github.com/idemledger/idemledger/internal/testdb"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name       string
		cfg        ledger.Options
		ttl, lease time.Duration
		err        string
	}{
		{"zero means defaults", ledger.Options{}, 24 * time.Hour, time.Minute, ""},
		{"set", ledger.Options{TTL: time.Hour, Lease: 5 * time.Second}, time.Hour, 5 * time.Second, ""},
		{"one millisecond", ledger.Options{TTL: time.Millisecond, Lease: time.Millisecond}, time.Millisecond, time.Millisecond, ""},
		{"negative TTL", ledger.Options{TTL: -time.Second}, 0, 0, "ledger: invalid options: TTL -1s is below 1ms"},
		{"negative lease", ledger.Options{Lease: -1}, 0, 0, "ledger: invalid options: lease -1ns is below 1ms"},
		{"sub-millisecond TTL", ledger.Options{TTL: time.Microsecond}, 0, 0, "ledger: invalid options: TTL 1µs is below 1ms"},
		{"negative key length", ledger.Options{MaxKeyLength: -1}, 0, 0, "ledger: invalid options: MaxKeyLength -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ledger.New(sqlite.New(testdb.SQLitePool(t)), tt.cfg)
			if tt.err != "" {
				if !errors.Is(err, ledger.ErrInvalidOptions) || err.Error() != tt.err {
					t.Fatalf("New = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.TTL() != tt.ttl || l.Lease() != tt.lease {
				t.Errorf("TTL, Lease = %v, %v; want %v, %v", l.TTL(), l.Lease(), tt.ttl, tt.lease)
			}
		})
	}
}
