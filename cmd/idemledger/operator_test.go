package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
)

// operatorDB returns a migrated ledger database of driver e, its DSN (as
// the command's -db takes it), and a pool on it for writing rows by hand.
func operatorDB(t *testing.T, e string) (dsn string, db *sql.DB) {
	t.Helper()
	d, ok := testdb.OpenSQL(t, e)
	if !ok {
		t.Fatalf("no database/sql driver %s", e)
	}
	return d.Eng.URL(t, d.Source), d.SQL
}

// Fixed rows: times chosen so that their milliseconds end in zeros, which
// the output must keep (".100Z", ".000Z").
const (
	created   = 1700000000000 // 2023-11-14T22:13:20.000Z
	completed = 1700000000100 // 2023-11-14T22:13:20.100Z
	far       = 4102444800000 // 2100-01-01T00:00:00.000Z
)

func insertOperatorRows(t *testing.T, e string, db *sql.DB) {
	t.Helper()
	fp := strings.Repeat("\xab", 32)
	rows := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO idempotency_ledger (scope, "key", fingerprint, state, fence, status, headers, body, created_at, completed_at, expires_at)
			VALUES ('tenant-1', 'order-17', ?, 'completed', 2, 201, ?, ?, ?, ?, ?)`,
			[]any{[]byte(fp), []byte(`{"Content-Type":["application/json"]}`), []byte(`{"id":7}`), created, completed, far}},
		{`INSERT INTO idempotency_ledger (scope, "key", fingerprint, state, fence, lease_token, lease_expires_at, created_at, expires_at)
			VALUES ('tenant-1', 'order-18', ?, 'in_flight', 1, 'tok', ?, ?, ?)`,
			[]any{[]byte(fp), far, created, far + 100}},
		// A step order-18's run recorded.
		{`INSERT INTO idempotency_steps (scope, "key", name, fingerprint, fence, result, created_at)
			VALUES ('tenant-1', 'order-18', 'charge', ?, 1, ?, ?)`,
			[]any{[]byte(fp), []byte("ch_1"), created}},
	}
	for _, r := range rows {
		if _, err := db.Exec(testdb.Rebind(e, r.q), r.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOperatorOutput: stats and inspect, as text and as -json, show times
// with their trailing zeros, and inspect shows an in-flight record's
// expiry; on both engines.
func TestOperatorOutput(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			insertOperatorRows(t, e, db)
			cases := []struct {
				args []string
				want string
			}{
				{[]string{"stats"}, "in flight 1\n lease ran out 0\n passed commit point 0\ncompleted, expired included 1\nreleased 0\nexpired, awaiting purge 0\npurge backlog 0s\n" +
					"oldest created 2023-11-14T22:13:20.000Z\nnewest created 2023-11-14T22:13:20.000Z\nrecorded steps 1\n"},
				{[]string{"stats", "-json"}, `{
  "in_flight": 1,
  "completed": 1,
  "released": 0,
  "expired": 0,
  "lease_expired": 0,
  "committed": 0,
  "completed_estimated": false,
  "expired_estimated": false,
  "purge_backlog_ms": 0,
  "oldest_created": "2023-11-14T22:13:20.000Z",
  "newest_created": "2023-11-14T22:13:20.000Z",
  "steps": 1
}
`},
				{[]string{"inspect", "-scope", "tenant-1", "-key", "order-17"}, `scope "tenant-1"
key "order-17"
state completed
fingerprint ` + fp + `
fence 2
created 2023-11-14T22:13:20.000Z
completed 2023-11-14T22:13:20.100Z
expires 2100-01-01T00:00:00.000Z
status 201
header Content-Type: "application/json"
body
(8 bytes)
{"id":7}
`},
				{[]string{"inspect", "-scope", "tenant-1", "-key", "order-18"}, `scope "tenant-1"
key "order-18"
state in_flight
fingerprint ` + fp + `
fence 1
created 2023-11-14T22:13:20.000Z
lease expires 2100-01-01T00:00:00.000Z
expires 2100-01-01T00:00:00.100Z

steps
scope name fence recorded result bytes
"tenant-1" "charge" 1 2023-11-14T22:13:20.000Z 4
`},
				{[]string{"inspect", "-json", "-scope", "tenant-1", "-key", "order-17"}, `{
  "scope": "tenant-1",
  "key": "order-17",
  "state": "completed",
  "fingerprint": "` + fp + `",
  "fence": 2,
  "created_at": "2023-11-14T22:13:20.000Z",
  "lease_expires_at": null,
  "completed_at": "2023-11-14T22:13:20.100Z",
  "expires_at": "2100-01-01T00:00:00.000Z",
  "committed_at": null,
  "status": 201,
  "header": {
    "Content-Type": [
      "application/json"
    ]
  },
  "body": "{\"id\":7}"
}
`},
				{[]string{"inspect", "-json", "-scope", "tenant-1", "-key", "order-18"}, `{
  "scope": "tenant-1",
  "key": "order-18",
  "state": "in_flight",
  "fingerprint": "` + fp + `",
  "fence": 1,
  "created_at": "2023-11-14T22:13:20.000Z",
  "lease_expires_at": "2100-01-01T00:00:00.000Z",
  "completed_at": null,
  "expires_at": "2100-01-01T00:00:00.100Z",
  "committed_at": null,
  "status": null
}
`},
			}
			for _, c := range cases {
				r := idemledger(t, "", append(c.args, "-db", dsn)...)
				r.want(t, 0)
				got := r.stdout
				if !strings.Contains(strings.Join(c.args, " "), "-json") {
					got = squeeze(got)
				}
				if got != c.want {
					t.Errorf("%v:\n got %q\nwant %q", c.args, got, c.want)
				}
			}
		})
	}
}

// idemledgerEnv runs the binary with extra environment variables.
func idemledgerEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return exited(t, args, cmd.Run(), stdout.String(), stderr.String())
}

// TestDatabaseFromEnvironment: without -db the database comes from
// IDEMLEDGER_DB, and a suggested command can be pasted as it is: it never
// holds the redacted password.
func TestDatabaseFromEnvironment(t *testing.T) {
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			insertOperatorRows(t, e, db)
			r := idemledgerEnv(t, []string{dbEnv + "=" + dsn}, "stats", "-json")
			r.want(t, 0)
			if !strings.Contains(r.stdout, `"in_flight": 1,`) {
				t.Errorf("stats from %s: %q", dbEnv, r.stdout)
			}
			// -db wins over the environment.
			other := filepath.Join(t.TempDir(), "missing.db")
			r = idemledgerEnv(t, []string{dbEnv + "=" + dsn}, "stats", "-db", other)
			r.want(t, 1)
		})
	}

	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		args []string
		want string // the suggestion, after "apply it with: " or "create it with: "
	}{
		{"file named by -db", nil, []string{"stats", "-db", empty}, "idemledger migrate -db " + shellQuote(empty)},
		{"file named by the environment", []string{dbEnv + "=" + empty}, []string{"stats"}, "idemledger migrate"},
		{"missing file by the environment", []string{dbEnv + "=" + filepath.Join(dir, "none.db")}, []string{"stats"}, "idemledger migrate"},
		{"password in -db", nil, []string{"stats", "-db", "postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=1"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := idemledgerEnv(t, c.env, c.args...)
			if r.code == 0 {
				t.Fatalf("exit 0: %q", r.stdout)
			}
			if strings.Contains(r.stderr, "xxxxx -") || strings.Contains(r.stderr, "s3cret") {
				t.Errorf("stderr suggests a command with a password: %q", r.stderr)
			}
			if c.want == "" {
				return
			}
			m := regexp.MustCompile(`(?:apply|create) it with: (.*)\)\n$`).FindStringSubmatch(r.stderr)
			if m == nil || m[1] != c.want {
				t.Errorf("stderr %q: want the suggestion %q", r.stderr, c.want)
			}
		})
	}
	if got := migrateCommand("postgres://u:s3cret@h/db"); got != "idemledger migrate, with "+dbEnv+" set to the database URL (its password is not shown here)" {
		t.Errorf("migrateCommand with a password = %q", got)
	}
}

// TestPurgeProgressOnce: when the count reaches a multiple of the progress
// step exactly, the last (empty) batch does not print the line again.
func TestPurgeProgressOnce(t *testing.T) {
	dsn, db := operatorDB(t, testdb.SQLite)
	for i := range 20 {
		if _, err := db.Exec(`INSERT INTO idempotency_ledger (scope, "key", fingerprint, state, fence, status, created_at, completed_at, expires_at)
			VALUES ('s', ?, randomblob(32), 'completed', 1, 200, 1, 1, 2)`, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	p := idemledger(t, "", "purge", "-db", dsn, "-batch", "2")
	p.want(t, 0)
	if p.stdout != "20\n" || p.stderr != "purged 20 records so far\n" {
		t.Errorf("purge: stdout %q, stderr %q", p.stdout, p.stderr)
	}
}

// TestPurgeTimeout: -timeout stops a purge, exits 1, and the count it
// prints is exactly what was deleted; on both engines.
func TestPurgeTimeout(t *testing.T) {
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			const total = 20000
			if _, err := db.Exec(testdb.Rebind(e, `INSERT INTO idempotency_ledger (scope, "key", fingerprint, state, fence, status, created_at, completed_at, expires_at)
				SELECT 's', concat('k', n), ?, 'completed', 1, 200, 1, 1, 2 FROM (`+series(e, total)+`) AS g`), []byte(strings.Repeat("\x01", 32))); err != nil {
				t.Fatal(err)
			}
			p := idemledger(t, "", "purge", "-db", dsn, "-batch", "1", "-timeout", "1s", "-q")
			p.want(t, 1)
			var n int
			if _, err := fmt.Sscanf(p.stdout, "%d\n", &n); err != nil {
				t.Fatalf("stdout %q: %v", p.stdout, err)
			}
			if want := fmt.Sprintf("idemledger purge: stopped by -timeout 1s after %d records\n", n); p.stderr != want {
				t.Errorf("stderr %q, want %q", p.stderr, want)
			}
			var left int
			if err := db.QueryRow(`SELECT count(*) FROM idempotency_ledger`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			// On a loaded machine the deadline may pass before the first
			// batch; the count must be exact whatever it is.
			if n == total || left != total-n {
				t.Errorf("purge reported %d of %d, %d left", n, total, left)
			}

			// A deadline that passes before the database is open: the
			// same report, with nothing deleted.
			p = idemledger(t, "", "purge", "-db", dsn, "-timeout", "1ns")
			p.want(t, 1)
			if p.stdout != "0\n" || p.stderr != "idemledger purge: stopped by -timeout 1ns after 0 records\n" {
				t.Errorf("-timeout 1ns: stdout %q, stderr %q", p.stdout, p.stderr)
			}
		})
	}
}

// series is a subquery of the integers 1..n, column n, on driver e's
// engine.
func series(e string, n int) string { return testdb.EngineOf(e).Series(n) }

// TestVersion: the version command names the build and the schema.
func TestVersion(t *testing.T) {
	r := idemledger(t, "", "version")
	r.want(t, 0)
	if !regexp.MustCompile(`^idemledger \S+ go1\.\d+\S*( [0-9a-f]{40} \S+( \+dirty)?)?\nschema ` + strconv.Itoa(int(schema.Latest)) + `\n$`).MatchString(r.stdout) {
		t.Errorf("version = %q", r.stdout)
	}
	r = idemledger(t, "", "version", "extra")
	r.want(t, 2)
}

// cliEngines are the drivers the command opens, one per engine.
var cliEngines = testdb.SQLDrivers()

// TestInspectAcrossScopes: without -scope, inspect shows the key's records
// in every scope; -in-flight lists the records in flight; on both engines.
func TestInspectAcrossScopes(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			insertOperatorRows(t, e, db)
			// order-17 again, in flight in another scope.
			if _, err := db.Exec(testdb.Rebind(e, `INSERT INTO idempotency_ledger (scope, "key", fingerprint, state, fence, lease_token, lease_expires_at, created_at, expires_at)
				VALUES ('tenant-2', 'order-17', ?, 'in_flight', 3, 'tok2', ?, ?, ?)`), []byte(strings.Repeat("\xab", 32)), far, completed, far); err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				args []string
				code int
				want string
			}{
				{[]string{"inspect", "-key", "order-17"}, 0, `scope "tenant-1"
key "order-17"
state completed
fingerprint ` + fp + `
fence 2
created 2023-11-14T22:13:20.000Z
completed 2023-11-14T22:13:20.100Z
expires 2100-01-01T00:00:00.000Z
status 201
header Content-Type: "application/json"
body
(8 bytes)
{"id":7}

scope "tenant-2"
key "order-17"
state in_flight
fingerprint ` + fp + `
fence 3
created 2023-11-14T22:13:20.100Z
lease expires 2100-01-01T00:00:00.000Z
expires 2100-01-01T00:00:00.000Z
`},
				{[]string{"inspect", "-key", "order-17", "-limit", "1", "-json"}, 0, "[\n  {\n    \"scope\": \"tenant-1\",\n"},
				{[]string{"inspect", "-in-flight"}, 0, `scope key fence created lease expires committed
"tenant-1" "order-18" 1 2023-11-14T22:13:20.000Z 2100-01-01T00:00:00.000Z -
"tenant-2" "order-17" 3 2023-11-14T22:13:20.100Z 2100-01-01T00:00:00.000Z -
`},
				{[]string{"inspect", "-in-flight", "-limit", "1", "-json"}, 0, "[\n  {\n    \"scope\": \"tenant-1\",\n    \"key\": \"order-18\",\n"},
				{[]string{"inspect", "-key", "nope"}, 1, ""},
				{[]string{"inspect", "-scope", "", "-key", "order-17"}, 1, ""}, // the empty scope, asked for: none there
				{[]string{"inspect", "-in-flight", "-key", "order-17"}, 2, ""},
				{[]string{"inspect", "-in-flight", "-limit", "0"}, 2, ""},
			}
			for _, c := range cases {
				r := idemledger(t, "", append(c.args, "-db", dsn)...)
				r.want(t, c.code)
				got := r.stdout
				if !strings.Contains(strings.Join(c.args, " "), "-json") {
					got = squeeze(got)
				} else if strings.HasPrefix(got, c.want) {
					got = c.want // -json: the start is what is checked
				}
				if got != c.want {
					t.Errorf("%v:\n got %q\nwant %q", c.args, got, c.want)
				}
			}
			if r := idemledger(t, "", "inspect", "-key", "nope", "-db", dsn); r.stderr != "idemledger inspect: no record of key \"nope\" in any scope\n" {
				t.Errorf("inspect of a missing key: %q", r.stderr)
			}
			// Nothing in flight is said in words, not as a bare header;
			// -json gives the empty list.
			empty, _ := operatorDB(t, e)
			r := idemledger(t, "", "inspect", "-in-flight", "-db", empty)
			r.want(t, 0)
			if r.stdout != "no record in flight\n" {
				t.Errorf("inspect -in-flight with nothing in flight: %q", r.stdout)
			}
			if r := idemledger(t, "", "inspect", "-in-flight", "-json", "-db", empty); r.code != 0 || r.stdout != "[]\n" {
				t.Errorf("inspect -in-flight -json with nothing in flight: %d %q", r.code, r.stdout)
			}
		})
	}
}

// TestStatsReleased: a record that Release ended counts as released, not
// in flight or completed, as text and as -json, on every engine.
func TestStatsReleased(t *testing.T) {
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			ctx := context.Background()
			l, err := ledger.New(testdb.WrapSQL(e, db, dsn).Driver, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			claim, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: "given-back", Fingerprint: hash.Bytes([]byte("a"))})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx, claim); err != nil {
				t.Fatal(err)
			}
			r := idemledger(t, "", "stats", "-db", dsn)
			r.want(t, 0)
			if want := "in flight 0\n lease ran out 0\n passed commit point 0\ncompleted, expired included 0\nreleased 1\n"; !strings.HasPrefix(squeeze(r.stdout), want) {
				t.Errorf("stats:\n%s\nwant it to start %q", r.stdout, want)
			}
			r = idemledger(t, "", "stats", "-json", "-db", dsn)
			r.want(t, 0)
			if !strings.Contains(r.stdout, "\"in_flight\": 0,\n  \"completed\": 0,\n  \"released\": 1,\n") {
				t.Errorf("stats -json: %q", r.stdout)
			}
		})
	}
}

// TestStatsPurgeBacklog: a record that expired an hour ago and was not
// purged shows as stats' purge backlog, as text and as -json
// (purge_backlog_ms), on every engine: what a monitor reads to see purge
// falling behind.
func TestStatsPurgeBacklog(t *testing.T) {
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			ctx := context.Background()
			// Written 25 hours ago with the default 24-hour TTL.
			then := time.Now().Add(-25 * time.Hour)
			l, err := ledger.New(testdb.WrapSQL(e, db, dsn).Driver, ledger.Options{Now: func() time.Time { return then }})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			claim, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: "old", Fingerprint: hash.Bytes([]byte("old"))})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Complete(ctx, claim, ledger.Outcome{Status: 200}); err != nil {
				t.Fatal(err)
			}
			r := idemledger(t, "", "stats", "-db", dsn)
			r.want(t, 0)
			// The expired record is still completed until purge deletes it:
			// the line says so, as the help does.
			if !strings.Contains(squeeze(r.stdout), "\ncompleted, expired included 1\nreleased 0\nexpired, awaiting purge 1\npurge backlog 1h0m") {
				t.Errorf("stats:\n%s\nwant 1 completed, expired included, 1 expired and a backlog of 1h0m and some seconds", r.stdout)
			}
			if h := idemledger(t, "", "stats", "-h"); !strings.Contains(h.stdout, "expired ones included") {
				t.Errorf("stats -h does not say that the counts by state include the expired records:\n%s", h.stdout)
			}
			r = idemledger(t, "", "stats", "-json", "-db", dsn)
			r.want(t, 0)
			var got struct {
				Expired   int64 `json:"expired"`
				Backlog   int64 `json:"purge_backlog_ms"`
				Estimated *bool `json:"expired_estimated"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatalf("stats -json: %v\n%s", err, r.stdout)
			}
			hour := time.Hour.Milliseconds()
			if got.Expired != 1 || got.Backlog < hour || got.Backlog > hour+time.Minute.Milliseconds() || got.Estimated == nil || *got.Estimated {
				t.Errorf("stats -json: expired %d, purge_backlog_ms %d, expired_estimated %v; want 1, an hour and a few seconds, false\n%s",
					got.Expired, got.Backlog, got.Estimated, r.stdout)
			}
		})
	}
}

// TestStatsLeaseRanOut: stats tells the records in flight whose lease ran
// out (a holder killed mid-request) from live ones, and counts those that
// passed their commit point ("gone" marked it before it was killed);
// inspect -in-flight shows when. On both engines.
func TestStatsLeaseRanOut(t *testing.T) {
	for _, e := range cliEngines {
		t.Run(e, func(t *testing.T) {
			dsn, db := operatorDB(t, e)
			ctx := context.Background()
			drv := testdb.WrapSQL(e, db, dsn).Driver
			earlier := time.Now().Add(-2 * time.Minute)
			for _, c := range []struct {
				key string
				now func() time.Time
			}{
				{"gone", func() time.Time { return earlier }}, // its 1 min lease ran out a minute ago
				{"running", nil},
			} {
				l, err := ledger.New(drv, ledger.Options{Now: c.now})
				if err != nil {
					t.Fatal(err)
				}
				claim, err := l.Claim(ctx, ledger.Request{Scope: "s", Key: c.key, Fingerprint: hash.Bytes([]byte(c.key))})
				if err != nil {
					t.Fatal(err)
				}
				if c.key == "gone" {
					if err := l.Commit(ctx, claim); err != nil {
						t.Fatal(err)
					}
				}
				l.Close()
			}
			r := idemledger(t, "", "stats", "-db", dsn)
			r.want(t, 0)
			if got, want := squeeze(r.stdout), "in flight 2\n lease ran out 1\n passed commit point 1\ncompleted, expired included 0\nreleased 0\nexpired, awaiting purge 0\n"; !strings.HasPrefix(got, want) {
				t.Errorf("stats:\n got %q\nwant it to start %q", got, want)
			}
			r = idemledger(t, "", "stats", "-json", "-db", dsn)
			r.want(t, 0)
			if !strings.Contains(r.stdout, "\"in_flight\": 2,\n  \"completed\": 0,\n  \"released\": 0,\n  \"expired\": 0,\n  \"lease_expired\": 1,\n  \"committed\": 1,\n") {
				t.Errorf("stats -json: %q", r.stdout)
			}
			r = idemledger(t, "", "inspect", "-in-flight", "-db", dsn)
			r.want(t, 0)
			mark := earlier.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
			lines := strings.Split(squeeze(r.stdout), "\n")
			if len(lines) < 3 || lines[0] != "scope key fence created lease expires committed" ||
				!strings.HasPrefix(lines[1], `"s" "gone" 1 `) || !strings.HasSuffix(lines[1], " "+mark) ||
				!strings.HasPrefix(lines[2], `"s" "running" 1 `) || !strings.HasSuffix(lines[2], " -") {
				t.Errorf("inspect -in-flight:\n%s\nwant gone committed at %s, running not", r.stdout, mark)
			}
		})
	}
}
