package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

func TestInvalidRequest(t *testing.T) {
	eachDriver(t, testInvalidRequest[*sql.Tx], testInvalidRequest[pgx.Tx])
}

func testInvalidRequest[TTx any](t *testing.T, b *bundle[TTx]) {
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
			_, err := b.l.Claim(b.ctx, tt.req)
			check("Claim", err)

			tx, err := b.l.Driver().Begin(b.ctx)
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
			if err := b.l.Driver().Commit(b.ctx, tx); err != nil {
				t.Fatal(err)
			}
			if tt.req.Fingerprint != (hash.Digest{}) {
				_, err = b.l.Get(b.ctx, tt.req.Scope, tt.req.Key)
				check("Get", err)
			}
			if n := b.count(t, "idempotency_ledger"); n != 0 {
				t.Errorf("%d records stored for a refused request", n)
			}
		})
	}
}

func TestKeyLengthLimits(t *testing.T) {
	eachDriver(t, testKeyLengthLimits[*sql.Tx], testKeyLengthLimits[pgx.Tx])
}

func testKeyLengthLimits[TTx any](t *testing.T, b *bundle[TTx]) {
	if _, err := b.l.Claim(b.ctx, ledger.Request{Key: strings.Repeat("~", 255), Fingerprint: fp("x")}); err != nil {
		t.Errorf("255-byte key refused: %v", err)
	}
	if _, err := b.l.Claim(b.ctx, ledger.Request{Scope: strings.Repeat("é", 127), Key: " ", Fingerprint: fp("x")}); err != nil {
		t.Errorf("254-byte scope refused: %v", err)
	}
	short, err := ledger.New(b.d.Driver, ledger.Options{MaxKeyLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	_, err = short.Claim(b.ctx, ledger.Request{Key: "12345", Fingerprint: fp("x")})
	if want := "ledger: invalid request: key is 5 bytes, over the maximum of 4"; err == nil || err.Error() != want {
		t.Errorf("Claim with a 5-byte key = %v, want %q", err, want)
	}
}

// TestNilArguments: every operation refuses a nil argument with an error
// wrapping ErrInvalidRequest, before it touches the database, instead of
// panicking.
func TestNilArguments(t *testing.T) {
	eachDriver(t, testNilArguments[*sql.Tx], testNilArguments[pgx.Tx])
}

func testNilArguments[TTx any](t *testing.T, b *bundle[TTx]) {
	var (
		nl     *ledger.Ledger[TTx]
		nilCtx context.Context
		nilTx  TTx
	)
	c := b.claim(t, req("held", "p"))
	// The operations run on the pool; on SQLite they would wait for tx's
	// write lock if they went that far.
	tx, err := b.l.Driver().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.l.Driver().Rollback(b.ctx, tx)
	fn := func(context.Context) (int, error) { return 1, nil }
	ops := []struct {
		name string
		call func(l *ledger.Ledger[TTx], ctx context.Context) error
	}{
		{"Claim", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			_, err := l.Claim(ctx, req("k", "p"))
			return err
		}},
		{"Complete", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			return l.Complete(ctx, c, ledger.Outcome{Status: 200})
		}},
		{"CompleteTx", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			return l.CompleteTx(ctx, tx, c, ledger.Outcome{Status: 200})
		}},
		{"Release", func(l *ledger.Ledger[TTx], ctx context.Context) error { return l.Release(ctx, c) }},
		{"Extend", func(l *ledger.Ledger[TTx], ctx context.Context) error { _, err := l.Extend(ctx, c); return err }},
		{"Get", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			_, err := l.Get(ctx, "tenant-1", "held")
			return err
		}},
		{"Purge", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			_, err := l.Purge(ctx, ledger.PurgeOptions{})
			return err
		}},
		{"Stats", func(l *ledger.Ledger[TTx], ctx context.Context) error {
			_, err := l.Stats(ctx)
			return err
		}},
	}
	args := []struct {
		name string
		l    *ledger.Ledger[TTx]
		ctx  context.Context
		want string
	}{
		{"nil ledger", nl, b.ctx, "ledger: invalid request: nil ledger"},
		{"nil context", b.l, nilCtx, "ledger: invalid request: nil context"},
	}
	for _, op := range ops {
		for _, a := range args {
			t.Run(op.name+"/"+a.name, func(t *testing.T) {
				err := op.call(a.l, a.ctx)
				if !errors.Is(err, ledger.ErrInvalidRequest) || err.Error() != a.want {
					t.Errorf("%s with a %s = %v, want %q", op.name, a.name, err, a.want)
				}
			})
		}
	}

	others := []struct {
		name string
		call func() error
		want string
	}{
		{"Complete nil claim", func() error { return b.l.Complete(b.ctx, nil, ledger.Outcome{}) }, "ledger: invalid request: nil claim"},
		{"Release nil claim", func() error { return b.l.Release(b.ctx, nil) }, "ledger: invalid request: nil claim"},
		{"Extend nil claim", func() error { _, err := b.l.Extend(b.ctx, nil); return err }, "ledger: invalid request: nil claim"},
		{"Close nil ledger", func() error { return nl.Close() }, "ledger: invalid request: nil ledger"},
		{"Mutate nil context", func() error {
			_, err := ledger.Mutate(nilCtx, b.l, tx, req("k", "p"), fn)
			return err
		}, "ledger: invalid request: nil context"},
		{"Mutate nil ledger", func() error {
			_, err := ledger.Mutate(b.ctx, nl, tx, req("k", "p"), fn)
			return err
		}, "ledger: invalid request: nil ledger"},
		{"Mutate nil transaction", func() error {
			_, err := ledger.Mutate(b.ctx, b.l, nilTx, req("k", "p"), fn)
			return err
		}, "ledger: invalid request: nil transaction"},
		{"CompleteTx nil transaction", func() error { return b.l.CompleteTx(b.ctx, nilTx, c, ledger.Outcome{}) }, "ledger: invalid request: nil transaction"},
		{"Mutate nil function", func() error {
			_, err := ledger.Mutate[TTx, int](b.ctx, b.l, tx, req("k", "p"), nil)
			return err
		}, "ledger: invalid request: nil function"},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, ledger.ErrInvalidRequest) || err.Error() != tt.want {
				t.Errorf("%s = %v, want %q", tt.name, err, tt.want)
			}
		})
	}

	// Nothing was written by the refused calls, and the claim taken
	// before them still holds its lease.
	if err := b.l.Driver().Rollback(b.ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "idempotency_ledger"); n != 1 {
		t.Errorf("%d records after the refused calls, want the 1 claimed before them", n)
	}
	if r := b.get(t, "held"); r.State != ledger.StateInFlight || r.Fence != c.Fence {
		t.Errorf("the claim taken before the refused calls is now %+v", r)
	}
	if err := b.l.Complete(b.ctx, c, ledger.Outcome{Status: 200}); err != nil {
		t.Errorf("Complete after the refused calls: %v", err)
	}
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
