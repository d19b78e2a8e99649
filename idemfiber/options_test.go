package idemfiber_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/idemledger/idemledger/idemfiber"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/lifecycle"
	"github.com/idemledger/idemledger/sqlite"
)

// TestNewPanics: New refuses a configuration error when the server
// starts, naming the field, rather than serving requests unprotected.
func TestNewPanics(t *testing.T) {
	s := open(t, testdb.SQLiteDB(t, sqlite.Options{}))
	scope := func(fiber.Ctx) (string, error) { return "s", nil }
	for _, tc := range []struct {
		name string
		l    lifecycle.Ledger
		opts idemfiber.Options
		want string
	}{
		{"no ledger", nil, idemfiber.Options{Scope: scope}, "idemfiber: New needs a ledger"},
		{"no scope", s.l, idemfiber.Options{}, "Options.Scope is required"},
		{"lower-case method", s.l, idemfiber.Options{Scope: scope, Methods: []string{"post"}}, `Options.Methods: "post" is POST in lower case`},
		{"method not a token", s.l, idemfiber.Options{Scope: scope, Methods: []string{"PO ST"}}, `Options.Methods: "PO ST" is not a method`},
		{"negative body limit", s.l, idemfiber.Options{Scope: scope, MaxBodyBytes: -1}, "Options.MaxBodyBytes: -1 is negative"},
		{"unknown policy", s.l, idemfiber.Options{Scope: scope, FailurePolicy: 7}, "Options.FailurePolicy: 7 is neither"},
		{"bad replay field", s.l, idemfiber.Options{Scope: scope, ReplayHeaders: []string{"X Y"}}, `Options.ReplayHeaders: "X Y" is not a field name`},
		{"bad replay marker", s.l, idemfiber.Options{Scope: scope, ReplayHeader: "a:b"}, `Options.ReplayHeader: "a:b" is not a field name`},
		{"negative retry-after", s.l, idemfiber.Options{Scope: scope, InFlightRetryAfter: -time.Second}, "Options.InFlightRetryAfter: -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				got := fmt.Sprint(recover())
				if !strings.Contains(got, tc.want) {
					t.Errorf("panic %q, want one containing %q", got, tc.want)
				}
			}()
			idemfiber.New(tc.l, tc.opts)
		})
	}
	// The valid configuration, for contrast: no panic.
	idemfiber.New(s.l, idemfiber.Options{Scope: scope, Methods: []string{"POST", "PUT", "X-CUSTOM"},
		FailurePolicy: idemhttp.FailOpen, ReplayHeaders: []string{"X-Request-Id"}})
}
