package main

import (
	"bytes"
	"slices"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	tests := []struct {
		in, want string
		secrets  []string // argSecrets([]string{in})
	}{
		{"app.db", "app.db", nil},
		{"file:/var/lib/app.db", "file:/var/lib/app.db", nil},
		{"postgres://app@db:5432/x?sslmode=disable", "postgres://app@db:5432/x?sslmode=disable", nil},
		{"postgres://app:pw1234@db:5432/x?sslmode=disable", "postgres://app:xxxxx@db:5432/x?sslmode=disable", []string{"pw1234"}},
		// Escapes and the rest of the URL are kept as written.
		{"postgresql://app:p%40ss%2Fw@db/x#frag", "postgresql://app:xxxxx@db/x#frag", []string{"p%40ss%2Fw", "p@ss/w"}},
		{"POSTGRES://App:pw1234@DB/X", "POSTGRES://App:xxxxx@DB/X", []string{"pw1234"}},
		{"postgres://app:a@b@db/x", "postgres://app:xxxxx@db/x", []string{"a@b"}},
		// A colon and an '@' after the authority belong to the query.
		{"postgres://app:pw1234@db/x?application_name=a:b@c", "postgres://app:xxxxx@db/x?application_name=a:b@c", []string{"pw1234"}},
		{"postgres://app@db/x?sslmode=require&password=pw1234&PassWord=pw5678", "postgres://app@db/x?sslmode=require&password=xxxxx&PassWord=xxxxx", []string{"pw1234", "pw5678"}},
		{"postgres://app@db/x?sslpassword=key%20pw", "postgres://app@db/x?sslpassword=xxxxx", []string{"key%20pw", "key pw"}},
		{"postgres://app@db/x?passwordless=1", "postgres://app@db/x?passwordless=1", nil},
		// net/url refuses these; the redaction errs on the safe side.
		{"postgres://app:pw1234@db1:5432,db2:5432/x", "postgres://app:xxxxx@db1:5432,db2:5432/x", []string{"pw1234"}},
		{"postgres://app:pw1234@[::1/x?password=pw5678", "postgres://app:xxxxx@[::1/x?password=xxxxx", []string{"pw1234", "pw5678"}},
		{"-db=postgres://app:pw1234@db/x", "-db=postgres://app:xxxxx@db/x", []string{"pw1234"}},
		// key=value strings, libpq's syntax.
		{"host=db user=app password=pw1234 dbname=x", "host=db user=app password=xxxxx dbname=x", []string{"pw1234"}},
		{"host=db password = 'two words' dbname=x", "host=db password = xxxxx dbname=x", []string{"two words", "'two words'"}},
		{`host=db password='it\'s' sslpassword=k3y`, "host=db password=xxxxx sslpassword=xxxxx", []string{`'it\'s'`, `it\'s`, "it's", "k3y"}},
		{"host=db password=", "host=db password=xxxxx", nil},
		{"mypassword=1.db", "mypassword=1.db", nil},
		// User info with a password, whatever the spelling of the scheme
		// (mistyped, in capitals, or missing): the password goes.
		{"postgres:/app:pw1234@db:5432/x", "postgres:/app:xxxxx@db:5432/x", []string{"pw1234"}},
		{"postgres//app:pw1234@db:5432/x", "postgres//app:xxxxx@db:5432/x", []string{"pw1234"}},
		{"postgres:///app:pw1234@db/x", "postgres:///app:xxxxx@db/x", []string{"pw1234"}},
		{"postgres:app:pw1234@db/x", "postgres:app:xxxxx@db/x", []string{"pw1234"}},
		{"PostgreSQL:/app:p%40ss@db/x", "PostgreSQL:/app:xxxxx@db/x", []string{"p%40ss", "p@ss"}},
		{"postgress://app:pw1234@db/x", "postgress://app:xxxxx@db/x", []string{"pw1234"}},
		{"app:pw1234@db:5432/x", "app:xxxxx@db:5432/x", []string{"pw1234"}},
		{"-db=postgres:/app:pw1234@db/x", "-db=postgres:/app:xxxxx@db/x", []string{"pw1234"}},
		{"--db=app:pw1234@db/x", "--db=app:xxxxx@db/x", []string{"pw1234"}},
		{"postgres:/app:pw1234@db/x?password=pw5678", "postgres:/app:xxxxx@db/x?password=xxxxx", []string{"pw1234", "pw5678"}},
		// No password: nothing changes.
		{"postgres:/app@db/x", "postgres:/app@db/x", nil},
		{"postgres://app@db/x?sslmode=disable", "postgres://app@db/x?sslmode=disable", nil},
		{"/var/lib/app@2.db", "/var/lib/app@2.db", nil},
		{"file:/var/lib/app@2.db", "file:/var/lib/app@2.db", nil},
	}
	for _, tt := range tests {
		if got := redactDSN(tt.in); got != tt.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tt.in, got, tt.want)
		}
		got := argSecrets([]string{tt.in})
		want := slices.Clone(tt.secrets)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("argSecrets(%q) = %q, want %q", tt.in, got, want)
		}
	}
}

// TestIsPostgres: URL schemes are case-insensitive (RFC 3986, section
// 3.1), and pgx, which recognizes only the lower-case ones, is given the
// URL with its scheme in lower case.
func TestIsPostgres(t *testing.T) {
	tests := []struct {
		in   string
		pg   bool
		want string // what pgx is given
	}{
		{"postgres://app@db/x", true, "postgres://app@db/x"},
		{"postgresql://app@db/x", true, "postgresql://app@db/x"},
		{"POSTGRES://App@DB/X", true, "postgres://App@DB/X"},
		{"PostgreSQL://app@db/x", true, "postgresql://app@db/x"},
		{"postgres:/app@db/x", false, ""},
		{"postgres//app@db/x", false, ""},
		{"app.db", false, ""},
		{"file:app.db", false, ""},
	}
	for _, tt := range tests {
		if got := isPostgres(tt.in); got != tt.pg {
			t.Errorf("isPostgres(%q) = %v, want %v", tt.in, got, tt.pg)
		}
		if tt.pg {
			if got := pgxURL(tt.in); got != tt.want {
				t.Errorf("pgxURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		}
	}
}

func TestBlot(t *testing.T) {
	tests := []struct {
		in      string
		secrets []string
		want    string
	}{
		{"cannot parse `postgres://u:pw1234@h/x?password=pw1234`", []string{"pw1234"}, "cannot parse `postgres://u:xxxxx@h/x?password=xxxxx`"},
		// The longer secret wins where both match.
		{"a pw12345 b pw123", argSecrets([]string{"postgres://u:pw123@h", "postgres://u:pw12345@h"}), "a xxxxx b xxxxx"},
		// A secret made of x's does not grow the xxxxx of another.
		{"x: pw1234", []string{"pw1234", "x"}, "xxxxx: xxxxx"},
		{"nothing to hide", nil, "nothing to hide"},
	}
	for _, tt := range tests {
		if got := blot(tt.in, tt.secrets); got != tt.want {
			t.Errorf("blot(%q, %q) = %q, want %q", tt.in, tt.secrets, got, tt.want)
		}
		var buf bytes.Buffer
		n, err := blotWriter{w: &buf, secrets: tt.secrets}.Write([]byte(tt.in))
		if n != len(tt.in) || err != nil || buf.String() != tt.want {
			t.Errorf("blotWriter.Write(%q) = %d, %v, wrote %q; want %d, nil, %q", tt.in, n, err, buf.String(), len(tt.in), tt.want)
		}
	}
}
