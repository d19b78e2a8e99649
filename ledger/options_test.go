package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
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
		{"negative claim timeout", ledger.Options{ClaimTimeout: -time.Second}, 0, 0, "ledger: invalid options: ClaimTimeout -1s is negative"},
		{"claim timeout over the lease", ledger.Options{Lease: time.Second, ClaimTimeout: time.Hour}, 24 * time.Hour, time.Second, ""},
		{"key length at the limit", ledger.Options{MaxKeyLength: ledger.MaxKeyLengthLimit}, 24 * time.Hour, time.Minute, ""},
		{"key length above the limit", ledger.Options{MaxKeyLength: 1025}, 0, 0, "ledger: invalid options: MaxKeyLength 1025 is above 1024"},
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

// TestLongestKey: a key of MaxKeyLengthLimit bytes under a scope of
// MaxScopeLength bytes is stored and replayed on every driver, so the
// limit keeps PostgreSQL's primary-key index entries within their size.
func TestLongestKey(t *testing.T) {
	scope := strings.Repeat("s", ledger.MaxScopeLength)
	key := strings.Repeat("k~", ledger.MaxKeyLengthLimit/2)
	eachDriver(t,
		func(t *testing.T, b *bundle[*sql.Tx]) { longestKey(t, b.d.Driver, scope, key) },
		func(t *testing.T, b *bundle[pgx.Tx]) { longestKey(t, b.d.Driver, scope, key) })
}

func longestKey[TTx any](t *testing.T, d driver.Driver[TTx], scope, key string) {
	ctx := context.Background()
	l, err := ledger.New(d, ledger.Options{MaxKeyLength: ledger.MaxKeyLengthLimit})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := ledger.Request{Scope: scope, Key: key, Fingerprint: fp("p")}
	c, err := l.Claim(ctx, r)
	if err != nil {
		t.Fatalf("Claim of a %d-byte key under a %d-byte scope: %v", len(key), len(scope), err)
	}
	if err := l.Complete(ctx, c, ledger.Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	again, err := l.Claim(ctx, r)
	if err != nil || !again.Replayed() || again.Replay.Key != key || again.Replay.Scope != scope {
		t.Fatalf("retry = %+v, %v; want a replay of the record", again, err)
	}
	if _, err := l.Claim(ctx, ledger.Request{Scope: scope, Key: key + "k", Fingerprint: fp("p")}); !errors.Is(err, ledger.ErrInvalidRequest) {
		t.Errorf("Claim of a %d-byte key = %v; want ErrInvalidRequest", len(key)+1, err)
	}
}
