package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellQuote: a suggested command's arguments are quoted for a POSIX
// shell; sh reads each back as the one word it was.
func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"app.db", "app.db"},
		{"/var/lib/app-1_2.db", "/var/lib/app-1_2.db"},
		{"file:app.db", "file:app.db"},
		{"", "''"},
		{"no such db.db", "'no such db.db'"},
		{"it's.db", `'it'\''s.db'`},
		{"postgres://u:xxxxx@h/x?sslmode=disable&search_path=a", "'postgres://u:xxxxx@h/x?sslmode=disable&search_path=a'"},
		{"$HOME/a.db", "'$HOME/a.db'"},
		{"~/a.db", "'~/a.db'"},
		{"a*b.db", "'a*b.db'"},
		{"=a.db", "'=a.db'"},
		{"a\nb", "'a\nb'"},
		{"é.db", "'é.db'"},
		{`back\slash`, `'back\slash'`},
	}
	for _, tt := range tests {
		got := shellQuote(tt.in)
		if got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
		out, err := exec.Command("sh", "-c", "printf %s "+got).Output()
		if err != nil || string(out) != tt.in {
			t.Errorf("sh read %q back as %q (%v)", got, out, err)
		}
	}
}

// TestSuggestedCommands: the command an error suggests can be pasted into
// a shell, and none is suggested for an in-memory database, which no
// command can migrate.
func TestSuggestedCommands(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no such & db.db")
	r := idemledger(t, "", "stats", "-db", missing)
	r.want(t, 1)
	if want := "no such database file (create it with: idemledger migrate -db " + shellQuote(missing) + ")\n"; !strings.HasSuffix(r.stderr, want) {
		t.Errorf("stderr %q, want it to end with %q", r.stderr, want)
	}
	for _, dsn := range []string{":memory:", "file::memory:"} {
		for _, args := range [][]string{
			{"stats", "-db", dsn},
			{"purge", "-db", dsn},
			{"inspect", "-db", dsn, "-key", "k"},
			{"migrate", "-db", dsn},
			{"migrate", "-db", dsn, "version"},
			{"demo", "-db", dsn},
		} {
			r := idemledger(t, "", args...)
			r.want(t, 2)
			if strings.Contains(r.stderr, "migrate -db") || !strings.Contains(r.stderr, "is an in-memory database") {
				t.Errorf("%q: stderr %q", args, r.stderr)
			}
		}
	}
}
