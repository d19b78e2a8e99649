package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

func TestInvalidRequest(t *testing.T) {
	eachEngine(t, func(t *testing.T, e testdb.Engine) {
		b := setup(t, e)
		good := fp("payload")
		tests := []struct {
			name string
			req  ledger.Request
			want string
		}{
			{"empty key", ledger.Request{Key: "", Fingerprint: good}, "ledger: invalid request: empty key"},
			{"key over 255 bytes", ledger.Request{Key: strings.Repeat("k", 256), Fingerprint: good}, "ledger: invalid request: key is 256 bytes, over the maximum of 255"},
			{"newline in key", ledger.Request{Key: "abc\n", Fingerprint: good}, "ledger: invalid request: key byte 3 is not printable ASCII"},
			{"NUL in key", ledger.Request{Key: "\x00", Fingerprint: good}, "ledger: invalid request: key byte 0 is not printable ASCII"},
			{"DEL in key", ledger.Request{Key: "a\x7f", Fingerprint: good}, "ledger: invalid request: key byte 1 is not printable ASCII"},
			{"non-ASCII key", ledger.Request{Key: "clé", Fingerprint: good}, "ledger: invalid request: key byte 2 is not printable ASCII"},
			{"zero fingerprint", ledger.Request{Key: "k"}, "ledger: invalid request: zero fingerprint"},
			{"scope over 255 bytes", ledger.Request{Scope: strings.Repeat("s", 256), Key: "k", Fingerprint: good}, "ledger: invalid request: scope is 256 bytes, over the maximum of 255"},
			{"control character in scope", ledger.Request{Scope: "a\tb", Key: "k", Fingerprint: good}, "ledger: invalid request: scope byte 1 is a control character"},
			{"invalid UTF-8 scope", ledger.Request{Scope: "a\xffb", Key: "k", Fingerprint: good}, "ledger: invalid request: scope is not valid UTF-8"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				check := func(op string, err error) {
					t.Helper()
					if !errors.Is(err, ledger.ErrInvalidRequest) || err.Error() != tt.want {
						t.Errorf("%s = %v, want %q", op, err, tt.want)
					}
				}
				_, err := b.l.Claim(b.ctx, b.db, tt.req)
				check("Claim", err)

				tx, err := b.db.Begin()
				if err != nil {
					t.Fatal(err)
				}
				called := false
				_, err = ledger.Mutate(b.ctx, b.l, tx, tt.req, func(context.Context) (int, error) {
					called = true
					return 1, nil
				})
				check("Mutate", err)
				if called {
					t.Error("Mutate ran fn for a refused request")
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if tt.req.Fingerprint != (hash.Digest{}) {
					_, err = b.l.Get(b.ctx, b.db, tt.req.Scope, tt.req.Key)
					check("Get", err)
				}
				if n := b.count(t, "idempotency_ledger"); n != 0 {
					t.Errorf("%d records stored for a refused request", n)
				}
			})
		}
	})
}

func TestKeyLengthLimits(t *testing.T) {
	eachEngine(t, func(t *testing.T, e testdb.Engine) {
		b := setup(t, e)
		if _, err := b.l.Claim(b.ctx, b.db, ledger.Request{Key: strings.Repeat("~", 255), Fingerprint: fp("x")}); err != nil {
			t.Errorf("255-byte key refused: %v", err)
		}
		if _, err := b.l.Claim(b.ctx, b.db, ledger.Request{Scope: strings.Repeat("é", 127), Key: " ", Fingerprint: fp("x")}); err != nil {
			t.Errorf("254-byte scope refused: %v", err)
		}
		short, err := ledger.New(ledger.Config{MaxKeyLength: 4})
		if err != nil {
			t.Fatal(err)
		}
		_, err = short.Claim(b.ctx, b.db, ledger.Request{Key: "12345", Fingerprint: fp("x")})
		if want := "ledger: invalid request: key is 5 bytes, over the maximum of 4"; err == nil || err.Error() != want {
			t.Errorf("Claim with a 5-byte key = %v, want %q", err, want)
		}
	})
}

func TestNilArguments(t *testing.T) {
	eachEngine(t, func(t *testing.T, e testdb.Engine) {
		b := setup(t, e)
		for name, err := range map[string]error{
			"Complete": b.l.Complete(b.ctx, b.db, nil, ledger.Outcome{}),
			"Release":  b.l.Release(b.ctx, b.db, nil),
			"Extend":   b.l.Extend(b.ctx, b.db, nil),
		} {
			if want := "ledger: invalid request: nil claim"; err == nil || err.Error() != want {
				t.Errorf("%s(nil) = %v, want %q", name, err, want)
			}
		}
		_, err := ledger.Mutate[int](b.ctx, b.l, nil, req("k", "p"), func(context.Context) (int, error) { return 0, nil })
		if want := "ledger: invalid request: nil transaction"; err == nil || err.Error() != want {
			t.Errorf("Mutate(nil tx) = %v, want %q", err, want)
		}
		tx, err := b.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = ledger.Mutate[int](b.ctx, b.l, tx, req("k", "p"), nil)
		if want := "ledger: invalid request: nil function"; err == nil || err.Error() != want {
			t.Errorf("Mutate(nil fn) = %v, want %q", err, want)
		}
		_, err = ledger.Mutate[int](b.ctx, nil, tx, req("k", "p"), func(context.Context) (int, error) { return 0, nil })
		if want := "ledger: invalid request: nil ledger"; err == nil || err.Error() != want {
			t.Errorf("Mutate(nil ledger) = %v, want %q", err, want)
		}
	})
}

func TestCheckScope(t *testing.T) {
	tests := []struct {
		scope, want string // want "" for accepted
	}{
		{"", ""},
		{"tenant-42", ""},
		{"équipe/東京", ""},
		{strings.Repeat("s", ledger.MaxScopeLength), ""},
		{strings.Repeat("s", ledger.MaxScopeLength+1), "ledger: invalid request: scope is 256 bytes, over the maximum of 255"},
		{"a\nb", "ledger: invalid request: scope byte 1 is a control character"},
		{"a\u0085b", "ledger: invalid request: scope byte 1 is a control character"},
		{"a\xffb", "ledger: invalid request: scope is not valid UTF-8"},
	}
	for _, tt := range tests {
		err := ledger.CheckScope(tt.scope)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckScope(%q) = %v, want nil", tt.scope, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ledger.ErrInvalidRequest)):
			t.Errorf("CheckScope(%q) = %v, want %q wrapping ErrInvalidRequest", tt.scope, err, tt.want)
		}
	}
}
