package idemhttp

import (
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// TestOptionsCheck: Middleware and TxHandler refuse, by a panic naming the
// field, the Options that would otherwise leave requests unprotected or
// answers malformed without a word (a newcomer's "post" left every POST
// unprotected); the ranges are the fields' documented ones.
func TestOptionsCheck(t *testing.T) {
	scope := func(*http.Request) (string, error) { return "s", nil }
	tests := []struct {
		name string
		opts Options
		want string // the panic; empty when the Options are accepted
	}{
		{"defaults", Options{Scope: scope}, ""},
		{"every field in range", Options{Scope: scope, Methods: []string{"POST", "PUT", "M-SEARCH", "purge"},
			MaxBodyBytes: 1, FailurePolicy: FailOpen, ReplayHeaders: []string{"Location", "x-request-id"},
			ReplayHeader: "X-Replayed", InFlightRetryAfter: time.Minute}, ""},
		{"no scope", Options{}, "idemhttp: Options.Scope is required"},
		{"lower-case POST", Options{Scope: scope, Methods: []string{"post"}},
			`idemhttp: Options.Methods: "post" is not "POST": methods are case-sensitive (RFC 9110 Section 9.1)`},
		{"mixed-case Patch", Options{Scope: scope, Methods: []string{"POST", "Patch"}},
			`idemhttp: Options.Methods: "Patch" is not "PATCH": methods are case-sensitive (RFC 9110 Section 9.1)`},
		{"method with a space", Options{Scope: scope, Methods: []string{"POST "}},
			`idemhttp: Options.Methods: "POST " is not a method (a token, RFC 9110 Section 9.1)`},
		{"empty method", Options{Scope: scope, Methods: []string{""}},
			`idemhttp: Options.Methods: "" is not a method (a token, RFC 9110 Section 9.1)`},
		{"negative body limit", Options{Scope: scope, MaxBodyBytes: -1},
			"idemhttp: Options.MaxBodyBytes: -1 is negative"},
		{"unknown policy", Options{Scope: scope, FailurePolicy: 7},
			"idemhttp: Options.FailurePolicy: 7 is neither FailClosed nor FailOpen"},
		{"replay header with a space", Options{Scope: scope, ReplayHeader: "bad header"},
			`idemhttp: Options.ReplayHeader: "bad header" is not a field name (RFC 9110 Section 5.1)`},
		{"allowlisted name with a colon", Options{Scope: scope, ReplayHeaders: []string{"Location", "X-A:"}},
			`idemhttp: Options.ReplayHeaders: "X-A:" is not a field name (RFC 9110 Section 5.1)`},
		{"negative retry after", Options{Scope: scope, InFlightRetryAfter: -time.Second},
			"idemhttp: Options.InFlightRetryAfter: -1s is negative"},
	}
	l, err := ledger.New(sqlite.New(testdb.SQLitePool(t)), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	fn := TxFunc[*sql.Tx](func(http.ResponseWriter, *http.Request, *sql.Tx) {})
	for _, tt := range tests {
		for form, build := range map[string]func(){
			"Middleware": func() { Middleware(l, tt.opts)(next) },
			"TxHandler":  func() { TxHandler(l, tt.opts, fn) },
		} {
			got := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg, _ = r.(string)
						if msg == "" {
							msg = "a panic that is not a string"
						}
					}
				}()
				build()
				return ""
			}()
			if got != tt.want {
				t.Errorf("%s: %s panics %q, want %q", tt.name, form, got, tt.want)
			}
		}
	}
}
