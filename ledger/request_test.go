package ledger_test

import (
	"context"
	"database/sql"
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

// TestNilArguments: every operation refuses a nil argument with an error
// wrapping ErrInvalidRequest, before it touches the database, instead of
// panicking.
func TestNilArguments(t *testing.T) {
	eachEngine(t, func(t *testing.T, e testdb.Engine) {
		b := setup(t, e)
		var (
			nl     *ledger.Ledger
			nilCtx context.Context
			nilDB  *sql.DB
			nilTx  *sql.Tx
			nilCon *sql.Conn
		)
		c := b.claim(t, req("held", "p"))
		// The operations get b.db; on SQLite they would wait for tx's write
		// lock if they went that far.
		tx, err := b.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		fn := func(context.Context) (int, error) { return 1, nil }
		ops := []struct {
			name string
			call func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error
		}{
			{"Claim", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error {
				_, err := l.Claim(ctx, db, req("k", "p"))
				return err
			}},
			{"Complete", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error {
				return l.Complete(ctx, db, c, ledger.Outcome{Status: 200})
			}},
			{"Release", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error { return l.Release(ctx, db, c) }},
			{"Extend", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error { return l.Extend(ctx, db, c) }},
			{"Get", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error {
				_, err := l.Get(ctx, db, "tenant-1", "held")
				return err
			}},
			{"Purge", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error {
				_, err := l.Purge(ctx, db, ledger.PurgeOptions{})
				return err
			}},
			{"Stats", func(l *ledger.Ledger, ctx context.Context, db ledger.DBTX) error {
				_, err := l.Stats(ctx, db)
				return err
			}},
		}
		args := []struct {
			name string
			l    *ledger.Ledger
			ctx  context.Context
			db   ledger.DBTX
			want string
		}{
			{"nil ledger", nl, b.ctx, b.db, "ledger: invalid request: nil ledger"},
			{"nil context", b.l, nilCtx, b.db, "ledger: invalid request: nil context"},
			{"nil DBTX", b.l, b.ctx, nil, "ledger: invalid request: nil database"},
			{"nil *sql.DB", b.l, b.ctx, nilDB, "ledger: invalid request: nil database"},
			{"nil *sql.Tx", b.l, b.ctx, nilTx, "ledger: invalid request: nil database"},
			{"nil *sql.Conn", b.l, b.ctx, nilCon, "ledger: invalid request: nil database"},
		}
		for _, op := range ops {
			for _, a := range args {
				t.Run(op.name+"/"+a.name, func(t *testing.T) {
					err := op.call(a.l, a.ctx, a.db)
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
			{"Complete nil claim", func() error { return b.l.Complete(b.ctx, b.db, nil, ledger.Outcome{}) }, "ledger: invalid request: nil claim"},
			{"Release nil claim", func() error { return b.l.Release(b.ctx, b.db, nil) }, "ledger: invalid request: nil claim"},
			{"Extend nil claim", func() error { return b.l.Extend(b.ctx, b.db, nil) }, "ledger: invalid request: nil claim"},
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
			{"Mutate nil function", func() error {
				_, err := ledger.Mutate[int](b.ctx, b.l, tx, req("k", "p"), nil)
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
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := b.count(t, "idempotency_ledger"); n != 1 {
			t.Errorf("%d records after the refused calls, want the 1 claimed before them", n)
		}
		if r := b.get(t, "held"); r.State != ledger.StateInFlight || r.Fence != c.Fence {
			t.Errorf("the claim taken before the refused calls is now %+v", r)
		}
		if err := b.l.Complete(b.ctx, b.db, c, ledger.Outcome{Status: 200}); err != nil {
			t.Errorf("Complete after the refused calls: %v", err)
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
