package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// binary is the idemledger command, built once by TestMain: the tests run
// it as a user would, and check exit codes, stdout and stderr.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "idemledger-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "idemledger")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// idemledger runs the binary with args and stdin, and returns what it did.
func idemledger(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return exited(t, args, cmd.Run(), stdout.String(), stderr.String())
}

// exited is the result of a run of the binary with args that ended with
// err (nil, or an *exec.ExitError carrying its exit code).
func exited(t *testing.T, args []string, err error, stdout, stderr string) result {
	t.Helper()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code, stdout, stderr}
}

func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func TestDemo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	r := idemledger(t, "", "demo", "-db", db, "-n", "16")
	r.want(t, 0)
	for _, want := range []string{
		"STEP", "first request", "retry", "key reuse", "burst", "lost response", "purge", "after expiry",
		"all 8 checks held",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, " NO\n") {
		t.Errorf("a check failed:\n%s", r.stdout)
	}
	// The demo left the ledger's schema in the file it was given, and a
	// second run on the same file keeps to its own records.
	v := idemledger(t, "", "migrate", "-db", db, "version")
	v.want(t, 0)
	if v.stdout != fmt.Sprintf("version %d\n", schema.Latest) {
		t.Errorf("migrate version after demo = %q", v.stdout)
	}
	idemledger(t, "", "demo", "-db", "file:"+db, "-n", "4", "-ttl", "1s").want(t, 0)
}

// TestDemoRanges: the demo refuses a TTL below 1s, which the client's
// retry backoff (100-200 ms, and the burst of -n 1000) can outlive, so
// that the demo would report a double payment that the library, with
// such a TTL, rightly allowed. -h states the ranges.
func TestDemoRanges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ttl", "100ms"}, "-ttl must be between 1s and 1m, got 100ms"},
		{[]string{"-ttl", "999ms"}, "-ttl must be between 1s and 1m, got 999ms"},
		{[]string{"-ttl", "61s"}, "-ttl must be between 1s and 1m, got 1m1s"},
		{[]string{"-n", "1"}, "-n must be between 2 and 1000, got 1"},
		{[]string{"-n", "1001"}, "-n must be between 2 and 1000, got 1001"},
	} {
		args := append([]string{"demo", "-db", filepath.Join(t.TempDir(), "demo.db")}, tc.args...)
		r := idemledger(t, "", args...)
		r.want(t, 2)
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", args, r.stderr, tc.want)
		}
	}
	h := idemledger(t, "", "demo", "-h")
	h.want(t, 0)
	for _, want := range []string{"(2 to 1000)", "(1s to 1m)"} {
		if !strings.Contains(h.stdout, want) {
			t.Errorf("demo -h lacks %q:\n%s", want, h.stdout)
		}
	}
}

func TestCanonRFC8785(t *testing.T) {
	tests := []struct{ in, out string }{
		{"../../canonical/testdata/rfc8785/example.in.json", "../../canonical/testdata/rfc8785/example.out.json"},
		{"../../canonical/testdata/rfc8785/sorting.in.json", "../../canonical/testdata/rfc8785/sorting.out.json"},
	}
	for _, name := range []string{"arrays", "french", "structures", "unicode", "values", "weird"} {
		tests = append(tests, struct{ in, out string }{
			"../../canonical/testdata/jcs/input/" + name + ".json",
			"../../canonical/testdata/jcs/output/" + name + ".json",
		})
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.in), func(t *testing.T) {
			want, err := os.ReadFile(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.TrimSuffix(want, []byte("\n"))

			fromFile := idemledger(t, "", "canon", tc.in)
			fromFile.want(t, 0)
			if fromFile.stdout != string(want)+"\n" {
				t.Errorf("canon %s:\n got %q\nwant %q", tc.in, fromFile.stdout, want)
			}
			in, err := os.ReadFile(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			fromStdin := idemledger(t, string(in), "canon")
			fromStdin.want(t, 0)
			if fromStdin.stdout != fromFile.stdout {
				t.Errorf("canon from stdin differs from canon FILE")
			}

			// hash is SHA-256 of exactly those canonical bytes.
			sum := sha256.Sum256(want)
			h := idemledger(t, string(in), "hash")
			h.want(t, 0)
			if h.stdout != hex.EncodeToString(sum[:])+"\n" {
				t.Errorf("hash = %q, want %x", h.stdout, sum)
			}

			// -check: the output passes, the pretty-printed input (which
			// differs from its canonical form) fails with 1.
			okCheck := idemledger(t, string(want), "canon", "-check")
			okCheck.want(t, 0)
			if okCheck.stdout != "" {
				t.Errorf("canon -check printed %q", okCheck.stdout)
			}
			if !bytes.Equal(in, want) {
				idemledger(t, string(in), "canon", "-check").want(t, 1)
			}
			// What canon prints (one final newline) passes -check.
			idemledger(t, fromFile.stdout, "canon", "-check").want(t, 0)
			idemledger(t, fromFile.stdout+"\n", "canon", "-check").want(t, 1)
		})
	}
}

func TestCanonAndHashRefuseBadInput(t *testing.T) {
	tests := []struct {
		name, stdin string
		reason      *regexp.Regexp // the one line on stderr
	}{
		{"empty", "", regexp.MustCompile(`(?i)stdin: .*(no json|empty)`)},
		{"duplicate name", `{"a":1,"\u0061":2}`, regexp.MustCompile(`stdin: .*duplicate member name at offset 7$`)},
		{"lone surrogate", `["\ud800"]`, regexp.MustCompile(`(?i)stdin: .*surrogate`)},
		{"overflow", `1e400`, regexp.MustCompile(`(?i)stdin: .*(overflow|binary64|range)`)},
		{"trailing comma", `[1,]`, regexp.MustCompile(`(?i)stdin: .*trailing comma`)},
		{"invalid utf-8", "\"\xc0\xaf\"", regexp.MustCompile(`(?i)stdin: .*utf-8`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range []string{"canon", "hash"} {
				r := idemledger(t, tc.stdin, cmd)
				r.want(t, 1)
				if r.stdout != "" {
					t.Errorf("%s printed %q on stdout", cmd, r.stdout)
				}
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				if len(lines) != 1 || !tc.reason.MatchString(lines[0]) {
					t.Errorf("%s stderr = %q, want one line matching %s", cmd, r.stderr, tc.reason)
				}
			}
		})
	}
}

func TestCanonExact(t *testing.T) {
	plain := idemledger(t, `{"amount":9007199254740993}`, "canon")
	plain.want(t, 0)
	if plain.stdout != `{"amount":9007199254740992}`+"\n" {
		t.Errorf("canon = %q", plain.stdout)
	}
	exact := idemledger(t, `{"amount":9007199254740993}`, "canon", "-exact")
	exact.want(t, 1)
	if !strings.Contains(exact.stderr, "stdin: ") || strings.Count(exact.stderr, "\n") != 1 {
		t.Errorf("canon -exact stderr = %q", exact.stderr)
	}
	ok := idemledger(t, `[0.1,1.50,1e2]`, "canon", "-exact")
	ok.want(t, 0)
	if ok.stdout != "[0.1,1.5,100]\n" {
		t.Errorf("canon -exact = %q", ok.stdout)
	}
}

// TestCanonNoncharacters: canon and hash keep a Unicode noncharacter, as V8
// does; canon -strict refuses it.
func TestCanonNoncharacters(t *testing.T) {
	in := `{"b":1,"a":"\udbff\udfff"}`
	canon := idemledger(t, in, "canon")
	canon.want(t, 0)
	if want := "{\"a\":\"\U0010FFFF\",\"b\":1}\n"; canon.stdout != want {
		t.Errorf("canon = %q, want %q", canon.stdout, want)
	}
	h := idemledger(t, in, "hash")
	h.want(t, 0)
	if want := hash.Bytes([]byte("{\"a\":\"\U0010FFFF\",\"b\":1}")).String() + "\n"; h.stdout != want {
		t.Errorf("hash = %q, want %q", h.stdout, want)
	}
	strict := idemledger(t, in, "canon", "-strict")
	strict.want(t, 1)
	if re := regexp.MustCompile(`(?i)^idemledger canon: stdin: .*noncharacter.* at offset 12\n$`); strict.stdout != "" || !re.MatchString(strict.stderr) {
		t.Errorf("canon -strict: stdout %q, stderr %q, want one line matching %s", strict.stdout, strict.stderr, re)
	}
}

func TestHashRequest(t *testing.T) {
	body := `{"b":[true,null],"a":1.50}`
	r := idemledger(t, body, "hash", "-request", "POST", "/v1/payments?currency=eur&x=1", "-type", "application/json; charset=utf-8")
	r.want(t, 0)
	// The command must print what the library computes for the same
	// request (the library's own layout is pinned by hash's golden tests).
	want := hash.Request("POST", "/v1/payments?currency=eur&x=1", "application/json; charset=utf-8", []byte(body))
	if r.stdout != want.String()+"\n" {
		t.Errorf("hash -request = %q, want %s", r.stdout, want)
	}
	// Key order and spelling of numbers do not change a JSON fingerprint.
	same := idemledger(t, `{"a":1.5,"b":[true,null]}`, "hash", "-request", "POST", "/v1/payments?currency=eur&x=1", "-type", "application/json")
	same.want(t, 0)
	if same.stdout != r.stdout {
		t.Errorf("equivalent JSON bodies fingerprint differently: %q vs %q", same.stdout, r.stdout)
	}
	idemledger(t, "", "hash", "-type", "text/plain").want(t, 2)
}

// TestHashRequestStrict: -request takes an HTTP method (an RFC 9110
// token) and a request target, and anything else is a usage error, never
// a plausible fingerprint of something else: in particular a FILE taken
// for the TARGET, with the body read from standard input.
func TestHashRequestStrict(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // on stderr
	}{
		{[]string{"-request", "POST"}, "-request needs METHOD and TARGET"},
		{[]string{"-request", "POST", "-type", "application/json"}, "-request needs METHOD and TARGET"},
		{[]string{"-request", ""}, "-request needs METHOD and TARGET"},
		{[]string{"-request", "", "/payments"}, "-request needs METHOD and TARGET"},
		{[]string{"-request", "PO ST", "/payments"}, `METHOD "PO ST" is not an HTTP method (an RFC 9110 token)`},
		{[]string{"-request", "POST\n", "/payments"}, `METHOD "POST\n" is not an HTTP method (an RFC 9110 token)`},
		{[]string{"-request", "PÖST", "/payments"}, `METHOD "PÖST" is not an HTTP method (an RFC 9110 token)`},
		{[]string{"-request", "POST", "-type", "application/json", "body.json"}, `TARGET "body.json" is not a request target: want a path starting with '/' (and its query), or *`},
		{[]string{"-request", "POST", ""}, `TARGET "" is not a request target`},
		{[]string{"-request", "POST", "/a b"}, `TARGET "/a b" is not a request target: it holds a space or control character`},
		{[]string{"-request", "POST", body}, "TARGET " + strconv.Quote(body) + " names a file, and FILE is missing: give FILE, or - for standard input"},
		{[]string{"-request", "POST", "/payments", body, "extra"}, "want at most one FILE, got 2 arguments"},
	} {
		args := append([]string{"hash"}, tc.args...)
		r := idemledger(t, "{}", args...)
		r.want(t, 2)
		if !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%q: stdout %q, stderr %q; want it to say %q", args, r.stdout, r.stderr, tc.want)
		}
	}

	for _, tc := range []struct {
		args                         []string
		stdin                        string
		method, target, ctype, input string
	}{
		{[]string{"-request", "post", "/payments", "-type", "application/json", body}, "", "POST", "/payments", "application/json", `{"a":1}`},
		{[]string{"-request", "POST", body, "-"}, "[2]", "POST", body, "", "[2]"},
		{[]string{"-request", "OPTIONS", "*"}, "", "OPTIONS", "*", "", ""},
		{[]string{"-request", "M-SEARCH", "/x?y=1"}, "", "M-SEARCH", "/x?y=1", "", ""},
	} {
		args := append([]string{"hash"}, tc.args...)
		r := idemledger(t, tc.stdin, args...)
		r.want(t, 0)
		if want := hash.Request(tc.method, tc.target, tc.ctype, []byte(tc.input)).String() + "\n"; r.stdout != want {
			t.Errorf("%q = %q, want %q", args, r.stdout, want)
		}
	}
}

func TestUsage(t *testing.T) {
	idemledger(t, "").want(t, 2)
	idemledger(t, "", "frobnicate").want(t, 2)
	idemledger(t, "", "-h").want(t, 0)
	for _, c := range commands() {
		h := idemledger(t, "", c.name, "-h")
		h.want(t, 0)
		if !strings.HasPrefix(h.stdout, "usage: idemledger "+c.name) || h.stderr != "" {
			t.Errorf("%s -h: stdout %q, stderr %q; want the usage on stdout", c.name, h.stdout, h.stderr)
		}
		bad := idemledger(t, "", c.name, "-no-such-flag")
		if !strings.Contains(bad.stderr, "usage: idemledger "+c.name) || bad.stdout != "" {
			t.Errorf("%s -no-such-flag: stdout %q, stderr %q; want the usage on stderr", c.name, bad.stdout, bad.stderr)
		}
		idemledger(t, "", c.name, "-no-such-flag").want(t, 2)
	}
	idemledger(t, "", "purge").want(t, 2)                              // -db missing
	idemledger(t, "", "migrate", "-db", "x.db", "sideways").want(t, 2) // unknown action
	idemledger(t, "", "canon", "a", "b").want(t, 2)

	// Flags after an argument are arguments; the message says so.
	late := idemledger(t, "", "canon", "in.json", "-check")
	late.want(t, 2)
	if !strings.Contains(late.stderr, "flags go before arguments: -check was read as an argument") {
		t.Errorf("canon in.json -check: %q", late.stderr)
	}
	bad := idemledger(t, "", "stats", "-db", "file:x.db?mode=ro")
	bad.want(t, 2)
	if !strings.Contains(bad.stderr, "query parameters are not supported") {
		t.Errorf("stats -db file:...?mode=ro: %q", bad.stderr)
	}
	for _, dsn := range []string{"file:x.db#frag", "file:x.db#"} {
		frag := idemledger(t, "", "stats", "-db", dsn)
		frag.want(t, 2)
		if !strings.Contains(frag.stderr, "a file: URI ends at '#'; write a '#' of the file's name as %23") || strings.Contains(frag.stderr, "query") {
			t.Errorf("stats -db %s: %q", dsn, frag.stderr)
		}
	}
}

// TestHelp: "idemledger help CMD" is "idemledger CMD -h".
func TestHelp(t *testing.T) {
	top := idemledger(t, "", "help")
	top.want(t, 0)
	if !strings.HasPrefix(top.stdout, "usage: idemledger <command>") || top.stderr != "" {
		t.Errorf("help: stdout %q, stderr %q; want the usage on stdout", top.stdout, top.stderr)
	}
	for _, c := range commands() {
		h := idemledger(t, "", "help", c.name)
		h.want(t, 0)
		if want := idemledger(t, "", c.name, "-h").stdout; h.stdout != want || h.stderr != "" {
			t.Errorf("help %s printed %q (stderr %q), want %q", c.name, h.stdout, h.stderr, want)
		}
	}
	for _, args := range [][]string{{"help", "frobnicate"}, {"help", "migrate", "up"}, {"help", "-x"}} {
		r := idemledger(t, "", args...)
		r.want(t, 2)
		if r.stdout != "" || r.stderr == "" {
			t.Errorf("%q: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
	}
}

// TestMissingDatabase: a mistyped path is an error, not a new empty file,
// except for migrate up, which creates the database.
func TestMissingDatabase(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{
		{"stats", "-db", missing},
		{"purge", "-db", missing},
		{"inspect", "-db", missing, "-key", "k"},
		{"migrate", "-db", missing, "version"},
		{"migrate", "-db", missing, "down"},
	} {
		r := idemledger(t, "", args...)
		r.want(t, 1)
		if !strings.Contains(r.stderr, "no such database file (create it with: idemledger migrate -db ") {
			t.Errorf("%v: %q", args, r.stderr)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created the file", args)
		}
	}
	// A database without the ledger's table is named as such, and left as
	// it was: no migrations table appears in it.
	other := filepath.Join(dir, "other.db")
	db, err := sqlite.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := idemledger(t, "", "stats", "-db", other)
	r.want(t, 1)
	if !strings.Contains(r.stderr, "has no idemledger schema (apply it with: idemledger migrate -db ") {
		t.Errorf("stats on a database without the ledger: %q", r.stderr)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the other database now has %d objects (%v)", n, err)
	}

	// migrate version is not read-only, as its -h and docs/operations.md say: it
	// leaves the empty migrations table behind.
	v := idemledger(t, "", "migrate", "-db", other, "version")
	v.want(t, 0)
	if v.stdout != "version 0\n" {
		t.Errorf("migrate version = %q", v.stdout)
	}
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{schema.MigrationsTable}; !slices.Equal(tables, want) {
		t.Errorf("after migrate version the database holds the tables %q, want %q", tables, want)
	}
	if h := idemledger(t, "", "migrate", "-h"); !strings.Contains(h.stdout, "version too creates\nthe empty migrations table, "+schema.MigrationsTable) {
		t.Errorf("migrate -h does not say that version writes: %q", h.stderr)
	}
}

// TestAdmin runs migrate, stats, inspect and purge against a real file
// whose records were written through the library with a clock in the past,
// so that some have expired by the time the commands run.
// On PostgreSQL and MySQL, -db is the URL of a fresh schema or database of
// its own.
func TestAdmin(t *testing.T) {
	// The command reaches PostgreSQL through the postgres driver
	// (database/sql): the engines are what it tells apart.
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) { testAdmin(t, e) })
	}
}

func testAdmin(t *testing.T, e string) {
	var (
		path string
		db   *sql.DB
	)
	if e == testdb.SQLite {
		path = filepath.Join(t.TempDir(), "admin.db")
	} else {
		// A database of its own, already migrated: migrate up finds
		// nothing to do.
		path, db = operatorDB(t, e)
	}
	r := idemledger(t, "", "migrate", "-db", path)
	r.want(t, 0)
	if r.stdout != fmt.Sprintf("version %d\n", schema.Latest) {
		t.Fatalf("migrate up = %q", r.stdout)
	}

	ctx := context.Background()
	if db == nil {
		var err error
		if db, err = sqlite.Open(path); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
	}
	past := time.Now().Add(-48 * time.Hour).Truncate(time.Millisecond)
	drv := testdb.WrapSQL(e, db, path).Driver
	old, err := ledger.New(drv, ledger.Options{Now: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	now, err := ledger.New(drv, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := func(l *ledger.Ledger[*sql.Tx], key string, out ledger.Outcome) {
		t.Helper()
		c, err := l.Claim(ctx, ledger.Request{Scope: "acct-1", Key: key, Fingerprint: hash.Bytes([]byte(key))})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Complete(ctx, c, out); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		store(old, fmt.Sprintf("old-%d", i), ledger.Outcome{Status: 200})
	}
	store(now, "text", ledger.Outcome{Status: 201, Header: map[string][]string{"Location": {"/p/1"}}, Body: []byte(`{"id":1}`)})
	store(now, "binary", ledger.Outcome{Status: 200, Body: []byte{0, 1, 2, 0xff}})
	store(now, "obs-text", ledger.Outcome{Status: 200, Header: map[string][]string{
		"Content-Disposition": {"attachment; filename=\"caf\xe9.txt\""},
		"Link":                {"</a>", "\x1b[2J\xff"},
	}})
	if _, err := now.Claim(ctx, ledger.Request{Scope: "acct-1", Key: "running", Fingerprint: hash.Bytes([]byte("r"))}); err != nil {
		t.Fatal(err)
	}

	s := idemledger(t, "", "stats", "-db", path)
	s.want(t, 0)
	for _, line := range []string{"in flight *1\n", "completed, expired included *8\n", "expired, awaiting purge *5\n", "oldest created *" + regexp.QuoteMeta(past.UTC().Format("2006-01-02T15:04:05.000Z")) + "\n"} {
		if !regexp.MustCompile(line).MatchString(s.stdout) {
			t.Errorf("stats lacks a line matching %q:\n%s", line, s.stdout)
		}
	}

	in := idemledger(t, "", "inspect", "-db", path, "-scope", "acct-1", "-key", "text")
	in.want(t, 0)
	for _, want := range []string{`key "text"`, "state completed", "status 201", `header Location: "/p/1"`, "body\n(8 bytes)\n{\"id\":1}\n",
		"fingerprint " + hash.Bytes([]byte("text")).String()} {
		if !strings.Contains(squeeze(in.stdout), want) {
			t.Errorf("inspect lacks %q:\n%s", want, in.stdout)
		}
	}
	bin := idemledger(t, "", "inspect", "-db", path, "-scope", "acct-1", "-key", "binary")
	bin.want(t, 0)
	if !strings.Contains(bin.stdout, "body\n4 bytes, binary: 000102ff\n") {
		t.Errorf("inspect of a binary body:\n%s", bin.stdout)
	}
	// Header values are quoted: bytes that are not UTF-8 (obs-text) show
	// as escapes, and so do control characters, which would otherwise
	// reach the terminal.
	obs := idemledger(t, "", "inspect", "-db", path, "-scope", "acct-1", "-key", "obs-text")
	obs.want(t, 0)
	for _, want := range []string{
		`header Content-Disposition: "attachment; filename=\"caf\xe9.txt\""` + "\n",
		`header Link: "</a>"` + "\nheader Link: " + `"\x1b[2J\xff"` + "\n",
	} {
		if !strings.Contains(squeeze(obs.stdout), want) {
			t.Errorf("inspect lacks %q:\n%s", want, obs.stdout)
		}
	}
	running := idemledger(t, "", "inspect", "-db", path, "-scope", "acct-1", "-key", "running")
	running.want(t, 0)
	if !strings.Contains(squeeze(running.stdout), "state in_flight") || !strings.Contains(running.stdout, "lease expires") {
		t.Errorf("inspect of an in-flight record:\n%s", running.stdout)
	}
	missing := idemledger(t, "", "inspect", "-db", path, "-scope", "acct-2", "-key", "text")
	missing.want(t, 1)
	if missing.stderr != "idemledger inspect: ledger: get: record not found\n" {
		t.Errorf("inspect of another scope: %q", missing.stderr)
	}

	p := idemledger(t, "", "purge", "-db", path, "-batch", "2")
	p.want(t, 0)
	if p.stdout != "5\n" {
		t.Errorf("purge printed %q, want 5", p.stdout)
	}
	again := idemledger(t, "", "purge", "-db", path)
	again.want(t, 0)
	if again.stdout != "0\n" {
		t.Errorf("second purge printed %q, want 0", again.stdout)
	}
	if got, err := now.Stats(ctx); err != nil || got.Completed != 3 || got.InFlight != 1 || got.Expired != 0 {
		t.Errorf("after purge: %+v, %v", got, err)
	}

	// A database that a newer release migrated: version says so, up and
	// down refuse it and change nothing.
	newer := schema.Latest + 1
	if _, err := db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET version = %d", schema.MigrationsTable, newer)); err != nil {
		t.Fatal(err)
	}
	if v := idemledger(t, "", "migrate", "-db", path, "version"); v.stdout != fmt.Sprintf("version %d (newer than this idemledger, which knows versions up to %d)\n", newer, schema.Latest) {
		t.Errorf("migrate version of a newer schema = %q, %q", v.stdout, v.stderr)
	}
	for _, action := range []string{"up", "down"} {
		r := idemledger(t, "", "migrate", "-db", path, "-force", action)
		r.want(t, 1)
		if !strings.Contains(r.stderr, fmt.Sprintf("database schema is newer than this idemledger: the database is at version %d, this idemledger knows versions up to %d", newer, schema.Latest)) {
			t.Errorf("migrate %s of a newer schema: %q", action, r.stderr)
		}
	}
	for _, args := range [][]string{{"stats"}, {"purge"}, {"inspect", "-key", "k"}} {
		r := idemledger(t, "", append(append([]string(nil), args...), "-db", path)...)
		r.want(t, 1)
		if !strings.Contains(r.stderr, fmt.Sprintf("is at schema version %d, newer than this idemledger knows (%d): use the idemledger release that migrated it", newer, schema.Latest)) {
			t.Errorf("%s on a newer schema: %q", args[0], r.stderr)
		}
	}
	if _, err := db.ExecContext(ctx, "UPDATE "+schema.MigrationsTable+" SET version = "+strconv.Itoa(int(schema.Latest))); err != nil {
		t.Fatal(err)
	}

	// down drops records only when told to.
	refused := idemledger(t, "", "migrate", "-db", path, "down")
	refused.want(t, 1)
	if want := "idemledger migrate: the ledger holds 4 records (1 in flight); migrate down would drop them: add -force to do so\n"; refused.stderr != want {
		t.Errorf("migrate down of a ledger with records: %q, want %q", refused.stderr, want)
	}
	if got, err := now.Stats(ctx); err != nil || got.Completed+got.InFlight != 4 {
		t.Errorf("after a refused down: %+v, %v", got, err)
	}
	d := idemledger(t, "", "migrate", "-db", path, "-force", "down")
	d.want(t, 0)
	if d.stdout != "version 0\n" {
		t.Errorf("migrate down = %q", d.stdout)
	}
	if v, _, err := schema.Version(ctx, drv); err != nil || v != 0 {
		t.Errorf("schema.Version after down = %d, %v", v, err)
	}
	gone := idemledger(t, "", "stats", "-db", path)
	gone.want(t, 1)
	if !strings.Contains(gone.stderr, "has no idemledger schema") {
		t.Errorf("stats after migrate down: %q", gone.stderr)
	}
}

func TestPurgeProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.db")
	idemledger(t, "", "migrate", "-db", path).want(t, 0)
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 25 expired rows written directly: purge with -batch 2 reports at 20.
	for i := range 25 {
		if _, err := db.Exec(`INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, created_at, completed_at, expires_at)
			VALUES ('s', ?, randomblob(32), 'completed', 1, 200, 1, 1, 2)`, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	p := idemledger(t, "", "purge", "-db", path, "-batch", "2")
	p.want(t, 0)
	if p.stdout != "25\n" || p.stderr != "purged 20 records so far\n" {
		t.Errorf("purge: stdout %q, stderr %q", p.stdout, p.stderr)
	}

	// Nothing left to purge: no progress, whatever the batch size (ten
	// batches of the largest ones overflow an int64).
	for _, batch := range []string{"1", "1000", "922337203685477580", "922337203685477581", "4611686018427387904", "9223372036854775807"} {
		p := idemledger(t, "", "purge", "-db", path, "-batch", batch)
		p.want(t, 0)
		if p.stdout != "0\n" || p.stderr != "" {
			t.Errorf("purge -batch %s: stdout %q, stderr %q", batch, p.stdout, p.stderr)
		}
	}
}

// squeeze turns the runs of spaces that tabwriter pads columns with into
// one space, so that expectations do not depend on column widths.
func squeeze(s string) string {
	return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ")
}

// TestPasswordNeverShown: no failure of any subcommand prints the password
// of a DSN, on stdout or stderr, whether the DSN is given with -db, in
// place of another argument, or as another flag's value; the messages
// show xxxxx in its place.
func TestPasswordNeverShown(t *testing.T) {
	const secret = "s3cret" // every password below contains it
	dsns := []struct {
		name, dsn string
		code      int    // exit code of stats, purge, inspect and migrate
		upCode    int    // of migrate up, which may create an SQLite file
		demoCode  int    // of demo, which takes SQLite files only
		stats     string // what stats says about it
	}{
		{"unreachable", "postgres://postgres:s3cretpw@127.0.0.1:1/test?sslmode=disable", 1, 1, 2,
			"dial tcp 127.0.0.1:1: connect: connection refused"},
		{"escaped password", "postgres://postgres:s3cret%2Fpw@127.0.0.1:1/test?sslmode=disable", 1, 1, 2,
			"dial tcp 127.0.0.1:1: connect: connection refused"},
		{"password in the query", "postgres://postgres@127.0.0.1:1/test?sslmode=bogus&password=s3cretpw", 1, 1, 2,
			"postgres://postgres@127.0.0.1:1/test?sslmode=bogus&password=xxxxx"},
		{"unparseable URL", "postgres://postgres:s3cretpw@[::1/test", 1, 1, 2,
			"postgres://postgres:xxxxx@[::1/test"},
		{"multi-host URL", "postgres://postgres:s3cretpw@127.0.0.1:1,127.0.0.1:2/test?sslmode=disable", 1, 1, 2,
			"dial tcp 127.0.0.1:2: connect: connection refused"},
		{"key=value", "host=127.0.0.1 port=1 user=postgres password=s3cretpw dbname=test", 2, 2, 2,
			`-db "host=127.0.0.1 port=1 user=postgres password=xxxxx dbname=test" is a key=value PostgreSQL connection string`},
		{"key=value, quoted", "host=127.0.0.1 password='s3cret pw' dbname=test", 2, 2, 2,
			`-db "host=127.0.0.1 password=xxxxx dbname=test" is a key=value PostgreSQL connection string`},
		{"scheme in capitals", "POSTGRES://postgres:s3cretpw@127.0.0.1:1/test", 1, 1, 2,
			"dial tcp 127.0.0.1:1: connect: connection refused"},
		// Mistyped schemes are refused: taken for SQLite paths, they
		// would name a file after the password.
		{"postgres:/", "postgres:/postgres:s3cretpw@127.0.0.1:1/test", 2, 2, 2,
			`-db "postgres:/postgres:xxxxx@127.0.0.1:1/test" looks like a mistyped PostgreSQL URL`},
		{"postgres//", "postgres//postgres:s3cretpw@127.0.0.1:1/test", 2, 2, 2,
			`-db "postgres//postgres:xxxxx@127.0.0.1:1/test" looks like a mistyped PostgreSQL URL`},
		{"postgress://", "postgress://postgres:s3cretpw@127.0.0.1:1/test", 2, 2, 2,
			`-db "postgress://postgres:xxxxx@127.0.0.1:1/test" looks like a mistyped PostgreSQL URL`},
		{"file: URI with a password", "file://postgres:s3cretpw@otherhost/x.db", 2, 2, 2,
			`-db "file://postgres:xxxxx@otherhost/x.db": a file: URI names a local file`},
		// URLs of other schemes are refused, not taken for SQLite paths.
		{"mssql URL", "mssql://app:s3cretpw@db.example/app", 2, 2, 2,
			`-db "mssql://app:xxxxx@db.example/app": the scheme "mssql" is not supported: give ` + dsnForms()},
		{"go-sql-driver DSN", "app:s3cretpw@tcp(db.example:3306)/app", 2, 2, 2,
			`-db "app:xxxxx@tcp(db.example:3306)/app" is a go-sql-driver DSN; give a mysql://user:password@host:3306/database URL`},
		{"mysql URL without a database", "mysql://app:s3cretpw@db.example", 2, 2, 2,
			`-db "mysql://app:xxxxx@db.example" names no database (want mysql://user:password@host:3306/database)`},
		{"sqlite URL", "sqlite:///tmp/x.db", 2, 2, 2,
			`the scheme "sqlite" is not supported`},
	}
	check := func(t *testing.T, r result, code int, want string, args []string) {
		t.Helper()
		if r.code != code {
			t.Errorf("%q: exit code %d, want %d; stderr %q", args, r.code, code, r.stderr)
		}
		if strings.Contains(r.stdout, secret) || strings.Contains(r.stderr, secret) {
			t.Errorf("%q shows the password:\nstdout %q\nstderr %q", args, r.stdout, r.stderr)
		}
		if want != "" && !strings.Contains(r.stderr, want) {
			t.Errorf("%q: stderr %q lacks %q", args, r.stderr, want)
		}
	}
	for _, d := range dsns {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range []struct {
				args []string
				code int
				want string
			}{
				{[]string{"stats", "-db", d.dsn}, d.code, d.stats},
				{[]string{"purge", "-db", d.dsn}, d.code, ""},
				{[]string{"inspect", "-db", d.dsn, "-key", "k"}, d.code, ""},
				{[]string{"migrate", "-db", d.dsn, "version"}, d.code, ""},
				{[]string{"migrate", "-db", d.dsn, "down"}, d.code, ""},
				{[]string{"migrate", "-db", d.dsn}, d.upCode, ""},
				{[]string{"demo", "-db", d.dsn, "-n", "2"}, d.demoCode, ""},
			} {
				check(t, idemledger(t, "", c.args...), c.code, c.want, c.args)
			}
		})
	}

	// A DSN where a flag's value or an argument belongs.
	dsn := dsns[0].dsn
	shown := "postgres://postgres:xxxxx@127.0.0.1:1/test?sslmode=disable"
	kv := dsns[5].dsn
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"stats", dsn}, 2, "unexpected arguments: " + shown},
		{[]string{"stats", kv}, 2, "unexpected arguments: host=127.0.0.1 port=1 user=postgres password=xxxxx dbname=test"},
		{[]string{"stats", "x", "-db=" + dsn}, 2, "flags go before arguments: -db=" + shown + " was read as an argument"},
		{[]string{"migrate", dsn}, 2, `unknown action "` + shown + `"`},
		{[]string{"migrate", "-db", "x.db", dsn, dsn}, 2, `want one action, got "` + shown + " " + shown + `"`},
		{[]string{"canon", dsn}, 1, "open " + shown + ": no such file or directory"},
		{[]string{"hash", dsn}, 1, "open " + shown + ": no such file or directory"},
		{[]string{"purge", "-batch", dsn}, 2, `invalid value "` + shown + `" for flag -batch`},
		{[]string{"demo", "-n", dsn}, 2, `invalid value "` + shown + `" for flag -n`},
		{[]string{dsn}, 2, `idemledger: unknown command "` + shown + `"`},
	} {
		check(t, idemledger(t, "", c.args...), c.code, c.want, c.args)
	}

	// A database that the server lets in, without the ledger's schema.
	t.Run("no schema", func(t *testing.T) {
		base := os.Getenv(testdb.PostgresEnv)
		if base == "" {
			t.Skip("set " + testdb.PostgresEnv + " to run this test")
		}
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		pw, ok := u.User.Password()
		if !ok {
			// The server of the tests lets the role in without a password,
			// and then ignores one.
			pw = "s3cretpw"
			u.User = url.UserPassword(u.User.Username(), pw)
		}
		q := u.Query()
		q.Set("search_path", "idemledger_no_such_schema")
		u.RawQuery = q.Encode()
		args := []string{"stats", "-db", u.String()}
		r := idemledger(t, "", args...)
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		shown := u.String()
		// The suggestion never holds the redacted password, which could
		// not be pasted: such a database is named through IDEMLEDGER_DB.
		// No schema of the search_path exists, so migrate could not
		// apply idemledger's either: the message says to create one.
		want := shown + " has no schema of its search_path: create one (CREATE SCHEMA), then apply idemledger's with: idemledger migrate, with IDEMLEDGER_DB set to the database URL (its password is not shown here)\n"
		if r.code != 1 || r.stderr != "idemledger stats: "+want || strings.Contains(r.stdout+r.stderr, pw) {
			t.Errorf("%q: exit code %d, stderr %q; want 1 and %q", args, r.code, r.stderr, "idemledger stats: "+want)
		}
	})
}
