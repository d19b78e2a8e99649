package ledger_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// The crash test runs this test binary again as a worker process that
// works through keys k000000, k000001, ... on one SQLite file, and kills
// it with SIGKILL at a random moment, over and over. After every kill the
// parent opens the file afresh (so SQLite recovers the WAL of the dead
// process) and checks the invariants; the next worker starts again from
// the last key that left a trace, as a client would retry.
const (
	crashModeEnv  = "IDEMLEDGER_CRASH_WORKER" // "mutate", "lease" or "commit": run as a worker
	crashDBEnv    = "IDEMLEDGER_CRASH_DB"     // the database file
	crashKillsEnv = "IDEMLEDGER_CRASH_KILLS"  // kills per mode (default crashKillsCI, or crashKillsQuick)
	crashSeedEnv  = "IDEMLEDGER_CRASH_SEED"   // seed of the kill delays (default: random, logged)

	crashKillsCI = 200
	// crashKillsQuick is the kills per mode of a run without
	// testdb.LongEnv: enough for every kind of kill to land (before the
	// first key, mid-statement, between claim and effect) most runs,
	// while the full matrix runs in CI.
	crashKillsQuick = 20
	crashScope      = "crash"
	// crashLease is short so that the next worker takes over a dead
	// worker's lease within milliseconds; a live worker never loses its
	// lease to it, since only one worker runs at a time and a lease that
	// ran out without a takeover still holds.
	crashLease = 50 * time.Millisecond
	// crashMaxDelay bounds the random time between a worker's READY and
	// its SIGKILL. A worker does a key in about a millisecond (more under
	// -race), so a kill lands anywhere in the first few dozen keys.
	crashMaxDelay = 25 * time.Millisecond
)

// crashTables are the business tables: an order per key (transactional
// mode; no UNIQUE on key, so a second insert would show) and a keyed
// effect per key (lease mode) that remembers the fence of the claim that
// applied it and the highest fence that has come with the key since.
const crashTables = `
CREATE TABLE crash_orders (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL);
CREATE TABLE crash_effects (key TEXT PRIMARY KEY, fence INTEGER NOT NULL, seen_fence INTEGER NOT NULL);
`

func crashKey(i int) string { return fmt.Sprintf("k%06d", i) }

func crashIndex(key string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(key, "k"))
	if err != nil {
		panic("crash test: bad key " + key)
	}
	return i
}

func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, v, err))
	}
	return n
}

// TestCrashSafety SIGKILLs a worker doing Mutate (transactional mode) and,
// separately, one doing Claim, side effect, Complete (lease mode), at
// random moments, crashKillsCI times each with testdb.LongEnv set (as CI
// runs it), crashKillsQuick times each without (IDEMLEDGER_CRASH_KILLS to
// change either; a quarter of it with -short). See RELIABILITY.md.
func TestCrashSafety(t *testing.T) {
	if os.Getenv(crashModeEnv) != "" {
		t.Skip("inside a crash worker")
	}
	def := crashKillsCI
	if !testdb.LongRun() {
		def = crashKillsQuick
		t.Logf("%d kills per mode, not %d: set %s=1 for the full matrix", crashKillsQuick, crashKillsCI, testdb.LongEnv)
	}
	kills := envInt(crashKillsEnv, def)
	if testing.Short() && os.Getenv(crashKillsEnv) == "" {
		kills /= 4
	}
	seed := uint64(envInt(crashSeedEnv, int(rand.Uint32())))
	t.Logf("kills per mode %d, seed %d (%s=%d to repeat the kill delays)", kills, seed, crashSeedEnv, seed)
	for _, mode := range []string{"mutate", "lease", "commit"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := newCrashRun(t, mode, seed)
			for range kills {
				c.killOne()
			}
			c.finish()
		})
	}
}

// crashRun is the parent's side of one mode.
type crashRun struct {
	t      *testing.T
	mode   string
	path   string // database file
	effLog string // lease mode: the raw effect log, one line per run of the effect
	rng    *rand.Rand
	from   int          // next worker starts here
	next   *crashWorker // spawned, waiting for its keys

	// pending are the in-flight leases left by killed workers, by key:
	// the next workers must take them over once they expire, and complete.
	pending map[string]crashLeaseRow

	kills, killedBeforeReady int
	leftInFlight, takeovers  int
	commits                  int // mode "commit": keys whose mark was logged
	lastChecked              crashFigures
}

type crashLeaseRow struct {
	fence          int64
	leaseExpiresAt int64
}

// crashFigures are what a check found.
type crashFigures struct {
	completed, inFlight, maxIndex int
	rawRuns, rawKeys              int // lease mode: lines and keys of the raw effect log
}

func newCrashRun(t *testing.T, mode string, seed uint64) *crashRun {
	db, path := testdb.SQLiteFile(t, sqlite.Options{})
	if _, err := db.Exec(crashTables); err != nil {
		t.Fatal(err)
	}
	// The parent keeps no connection open while a worker runs: each
	// check opens the file afresh after the kill, as a restarted
	// application would, and SQLite recovers from the dead worker's WAL.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	salt := uint64(len(mode))
	return &crashRun{
		t: t, mode: mode, path: path,
		effLog:      filepath.Join(filepath.Dir(path), "effects.log"),
		rng:         rand.New(rand.NewPCG(seed, salt)),
		pending:     map[string]crashLeaseRow{},
		lastChecked: crashFigures{maxIndex: -1},
	}
}

// crashWorker is a worker process, started ahead of time: it waits for
// its first key and key count on stdin before it opens the database, so
// that its start-up (slow under -race on a busy machine) overlaps the
// previous worker's run and check.
type crashWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *bytes.Buffer
	ready  chan struct{} // closed when the worker has opened the database
}

func (c *crashRun) spawn() *crashWorker {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashModeEnv+"="+c.mode, crashDBEnv+"="+c.path,
		// The race detector sleeps a second at exit by default.
		"GORACE=atexit_sleep_ms=0")
	w := &crashWorker{cmd: cmd, stderr: new(bytes.Buffer), ready: make(chan struct{})}
	cmd.Stderr = w.stderr
	cmd.Stdout = &readyWriter{ready: w.ready}
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		// A worker spawned but never used reads EOF and ends.
		w.stdin.Close()
		w.cmd.Process.Kill()
		w.cmd.Wait()
	})
	return w
}

// run tells the next worker to do count keys from c.from (0: until
// killed), spawns the one after it, and returns the running worker.
func (c *crashRun) run(count int) *crashWorker {
	c.t.Helper()
	if c.next == nil {
		c.next = c.spawn()
	}
	w := c.next
	if _, err := fmt.Fprintf(w.stdin, "%d %d\n", c.from, count); err != nil {
		c.t.Fatalf("worker stdin: %v\n%s", err, w.stderr)
	}
	c.next = c.spawn()
	return w
}

// killOne runs a worker, kills it after a random delay and checks the file.
func (c *crashRun) killOne() {
	t := c.t
	w := c.run(0)
	select {
	case <-w.ready:
	case <-time.After(time.Minute):
		t.Fatalf("worker never became ready: %s", w.stderr)
	}
	time.Sleep(time.Duration(c.rng.Int64N(int64(crashMaxDelay))))
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	err := w.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("worker ended by itself (%v) instead of by SIGKILL:\n%s", err, w.stderr)
	}
	if bytes.Contains(w.stderr.Bytes(), []byte("crash worker:")) {
		t.Fatalf("worker failed before the kill:\n%s", w.stderr)
	}
	c.kills++
	c.check(false)
}

// finish runs a last worker to the end, over every key seen and a few
// more, without a kill: every lease left by a dead worker must be taken
// over and completed, and every key must be completed exactly once.
func (c *crashRun) finish() {
	t := c.t
	w := c.run(c.lastChecked.maxIndex - c.from + 4)
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("last worker: %v\n%s", err, w.stderr)
	}
	c.check(true)
	f := c.lastChecked
	if f.inFlight != 0 || len(c.pending) != 0 {
		t.Errorf("after the last worker: %d in flight, %d leases never taken over", f.inFlight, len(c.pending))
	}
	if f.completed != f.maxIndex+1 {
		t.Errorf("after the last worker: %d completed keys, want every key from 0 to %d", f.completed, f.maxIndex)
	}
	msg := fmt.Sprintf("%s: %d kills, %d keys completed exactly once", c.mode, c.kills, f.completed)
	if c.mode != "mutate" {
		msg += fmt.Sprintf("; %d leases left in flight by a killed worker, %d taken over after expiry; "+
			"keyed effect applied once per key; raw effect ran %d times for %d keys (%d re-runs, the lease-mode caveat)",
			c.leftInFlight, c.takeovers, f.rawRuns, f.rawKeys, f.rawRuns-f.rawKeys)
	}
	if c.mode == "commit" {
		msg += fmt.Sprintf("; %d keys marked committed, none of them run again after the mark", c.commits)
	}
	t.Log(msg)
}

// check opens the file as a restarted application would and checks the
// invariants of the mode; it sets c.from to the last key with a trace, so
// that the next worker retries it. final is set after the last worker.
func (c *crashRun) check(final bool) {
	t := c.t
	t.Helper()
	db, err := sqlite.Options{MaxOpenConns: 1}.Open(c.path)
	if err != nil {
		t.Fatalf("after kill %d: open: %v", c.kills, err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("after kill %d: integrity_check = %q, %v", c.kills, ok, err)
	}
	rows := crashLedgerRows(t, db)
	f := crashFigures{maxIndex: -1}
	for key, r := range rows {
		f.maxIndex = max(f.maxIndex, crashIndex(key))
		if r.state == "completed" {
			f.completed++
		} else {
			f.inFlight++
		}
	}
	switch c.mode {
	case "mutate":
		c.checkMutate(db, rows, f)
	case "lease":
		c.checkLease(db, rows, &f)
	case "commit":
		c.checkLease(db, rows, &f)
		c.checkCommits()
	}
	if f.maxIndex >= 0 {
		c.from = f.maxIndex
	}
	if f.maxIndex < c.lastChecked.maxIndex || f.completed < c.lastChecked.completed {
		t.Errorf("after kill %d: keys went missing: %+v, before %+v", c.kills, f, c.lastChecked)
	}
	c.lastChecked = f
	if t.Failed() {
		t.FailNow()
	}
}

type crashLedgerRow struct {
	state                     string
	fence                     int64
	leaseExpiresAt, createdAt int64
	body                      string
}

func crashLedgerRows(t *testing.T, db *sql.DB) map[string]crashLedgerRow {
	t.Helper()
	q, err := db.Query(`SELECT key, state, fence, coalesce(lease_expires_at, 0), created_at, coalesce(body, '')
		FROM idempotency_ledger WHERE scope = ?`, crashScope)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rows := map[string]crashLedgerRow{}
	for q.Next() {
		var key string
		var r crashLedgerRow
		if err := q.Scan(&key, &r.state, &r.fence, &r.leaseExpiresAt, &r.createdAt, &r.body); err != nil {
			t.Fatal(err)
		}
		rows[key] = r
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkMutate: every order has exactly one completed ledger row, which
// replays that order's id; no key has two orders; no completed ledger row
// lacks its order; and nothing is left in flight (Mutate's claim commits
// only together with its completion).
func (c *crashRun) checkMutate(db *sql.DB, rows map[string]crashLedgerRow, f crashFigures) {
	t := c.t
	orders := map[string][]int64{}
	q, err := db.Query("SELECT key, id FROM crash_orders")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var key string
		var id int64
		if err := q.Scan(&key, &id); err != nil {
			t.Fatal(err)
		}
		orders[key] = append(orders[key], id)
	}
	q.Close()
	for key, ids := range orders {
		r, ok := rows[key]
		switch {
		case len(ids) != 1:
			t.Errorf("after kill %d: %s has %d orders %v: applied more than once", c.kills, key, len(ids), ids)
		case !ok || r.state != "completed":
			t.Errorf("after kill %d: order of %s has no completed ledger row (%+v)", c.kills, key, r)
		case r.body != strconv.FormatInt(ids[0], 10):
			t.Errorf("after kill %d: %s replays %q, want order %d", c.kills, key, r.body, ids[0])
		}
	}
	for key, r := range rows {
		if _, ok := orders[key]; !ok {
			t.Errorf("after kill %d: ledger row of %s (%s) has no order", c.kills, key, r.state)
		}
	}
	if f.inFlight != 0 {
		t.Errorf("after kill %d: %d in-flight rows left by Mutate", c.kills, f.inFlight)
	}
}

// checkLease: every completed key's keyed effect exists and is the one the
// ledger replays; every effect belongs to a claimed key; the raw effect
// never ran twice under one lease (fence); and each lease a killed worker
// left in flight is later taken over, only after it expired, and completed.
func (c *crashRun) checkLease(db *sql.DB, rows map[string]crashLedgerRow, f *crashFigures) {
	t := c.t
	type effect struct{ fence, seen int64 }
	effects := map[string]effect{}
	q, err := db.Query("SELECT key, fence, seen_fence FROM crash_effects")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var key string
		var e effect
		if err := q.Scan(&key, &e.fence, &e.seen); err != nil {
			t.Fatal(err)
		}
		effects[key] = e
	}
	q.Close()
	for key, e := range effects {
		r, ok := rows[key]
		if !ok || e.fence > r.fence || e.seen > r.fence || e.fence > e.seen {
			t.Errorf("after kill %d: effect of %s %+v does not match its ledger row %+v", c.kills, key, e, r)
		}
	}
	for key, r := range rows {
		e, ok := effects[key]
		if r.state == "completed" && (!ok || r.body != strconv.FormatInt(e.fence, 10)) {
			t.Errorf("after kill %d: completed %s replays %q but its effect is %+v (present %v)", c.kills, key, r.body, e, ok)
		}
	}

	// The raw effect log: one line "key fence" per run.
	raw, err := os.ReadFile(c.effLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	lastFence := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var key string
		var fence int64
		if _, err := fmt.Sscan(sc.Text(), &key, &fence); err != nil {
			t.Fatalf("effect log line %q: %v", sc.Text(), err)
		}
		if prev, seen := lastFence[key]; seen && fence <= prev {
			t.Errorf("after kill %d: raw effect of %s ran twice under fence %d", c.kills, key, fence)
		}
		if r, ok := rows[key]; !ok || fence > r.fence {
			t.Errorf("after kill %d: raw effect of %s under fence %d, ledger row %+v", c.kills, key, fence, r)
		}
		lastFence[key] = fence
		f.rawRuns++
	}
	f.rawKeys = len(lastFence)

	// Leases left by earlier kills: still waiting (same fence, in flight),
	// or taken over after they expired.
	for key, p := range c.pending {
		r := rows[key]
		switch {
		case r.fence == p.fence && r.state == "in_flight":
			continue
		case r.fence <= p.fence:
			t.Errorf("after kill %d: lease of %s (fence %d) ended without a takeover: %+v", c.kills, key, p.fence, r)
		case r.createdAt < p.leaseExpiresAt:
			t.Errorf("after kill %d: lease of %s taken over at %d, before it expired at %d", c.kills, key, r.createdAt, p.leaseExpiresAt)
		}
		c.takeovers++
		delete(c.pending, key) // re-added below if the new lease is in flight too
	}
	for key, r := range rows {
		if r.state != "in_flight" {
			continue
		}
		if p, ok := c.pending[key]; !ok || p.fence != r.fence {
			c.leftInFlight++
			c.pending[key] = crashLeaseRow{fence: r.fence, leaseExpiresAt: r.leaseExpiresAt}
		}
	}
}

// checkCommits checks mode "commit": a key whose commit point was marked
// under fence f never ran its raw effect under a later fence, however the
// worker that marked it died.
func (c *crashRun) checkCommits() {
	t := c.t
	committed := map[string]int64{}
	for _, line := range crashLogLines(t, filepath.Join(filepath.Dir(c.path), "commits.log")) {
		committed[line.key] = line.fence
	}
	for _, line := range crashLogLines(t, c.effLog) {
		if f, ok := committed[line.key]; ok && line.fence > f {
			t.Errorf("after kill %d: %s marked committed under fence %d, its raw effect ran again under %d", c.kills, line.key, f, line.fence)
		}
	}
	c.commits = len(committed)
}

type crashLogLine struct {
	key   string
	fence int64
}

// crashLogLines reads a "key fence" log; a missing file is empty.
func crashLogLines(t *testing.T, path string) []crashLogLine {
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var lines []crashLogLine
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var l crashLogLine
		if _, err := fmt.Sscan(sc.Text(), &l.key, &l.fence); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// readyWriter closes ready when the worker prints its READY line.
type readyWriter struct {
	mu    sync.Mutex
	buf   []byte
	ready chan struct{}
	done  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.buf = append(w.buf, p...)
		if bytes.Contains(w.buf, []byte("READY\n")) {
			w.done = true
			close(w.ready)
		}
	}
	return len(p), nil
}

// TestCrashWorker is the body of a worker process of TestCrashSafety; it
// does nothing in a normal run. It fails by printing "crash worker:" to
// stderr and exiting at once, since the parent may kill it any moment.
func TestCrashWorker(t *testing.T) {
	mode := os.Getenv(crashModeEnv)
	if mode == "" {
		t.Skip("only run as a worker of TestCrashSafety")
	}
	die := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash worker: "+format+"\n", args...)
		os.Exit(3)
	}
	path := os.Getenv(crashDBEnv)
	var from, count int
	if _, err := fmt.Fscan(os.Stdin, &from, &count); err != nil {
		return // spawned ahead of time and not needed
	}
	db, err := sqlite.Options{MaxOpenConns: 1}.Open(path)
	if err != nil {
		die("open: %v", err)
	}
	defer db.Close()
	l, err := ledger.New(sqlite.New(db), ledger.Options{Lease: crashLease})
	if err != nil {
		die("%v", err)
	}
	effLog, err := os.OpenFile(filepath.Join(filepath.Dir(path), "effects.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		die("%v", err)
	}
	defer effLog.Close()
	commitLog, err := os.OpenFile(filepath.Join(filepath.Dir(path), "commits.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		die("%v", err)
	}
	defer commitLog.Close()
	ctx := context.Background()
	os.Stdout.WriteString("READY\n")
	for i := from; count == 0 || i < from+count; i++ {
		key := crashKey(i)
		r := ledger.Request{Scope: crashScope, Key: key, Fingerprint: fp("payload " + key)}
		var err error
		switch mode {
		case "mutate":
			err = crashMutate(ctx, db, l, r)
		case "lease":
			err = crashLeaseMode(ctx, db, l, r, effLog, nil)
		case "commit":
			err = crashLeaseMode(ctx, db, l, r, effLog, commitLog)
		default:
			err = fmt.Errorf("unknown mode %q", mode)
		}
		if err != nil {
			die("%s: %v", key, err)
		}
	}
}

// crashMutate is one request in transactional mode: a transaction, a
// Mutate that inserts an order, a commit. A replay must carry the id of the
// order that the first run inserted.
func crashMutate(ctx context.Context, db *sql.DB, l *ledger.Ledger[*sql.Tx], r ledger.Request) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := ledger.Mutate(ctx, l, tx, r, func(ctx context.Context) (int64, error) {
		res, err := tx.ExecContext(ctx, "INSERT INTO crash_orders (key) VALUES (?)", r.Key)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	})
	if err != nil {
		return err
	}
	if res.Replayed {
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM crash_orders WHERE key = ?", r.Key).Scan(&id); err != nil {
			return fmt.Errorf("replayed order: %w", err)
		}
		if id != res.Value {
			return fmt.Errorf("replay says order %d, the order is %d", res.Value, id)
		}
	}
	return tx.Commit()
}

// crashLeaseMode is one request in lease mode: claim (waiting out a lease
// left by a dead worker), run the effect, complete. The effect has two
// forms: a raw one, a line appended to a log file, which runs again
// whenever a retry takes over a lease whose holder died after running it;
// and a keyed one, an insert keyed by the idempotency key and guarded by
// the fence, which applies once whatever happens. The outcome stored is the
// fence under which the keyed effect was applied.
//
// With commitLog (mode "commit") the request marks its commit point
// (Ledger.Commit) after both effects, logs "key fence" to commitLog once
// the mark is written, and claims with Recover: a run that recovers a
// marked record (Claim.CommittedAt) makes no effect, it looks the keyed
// one up and completes with it. A key marked under fence f must then never
// see its raw effect again under a later fence (checkCommits).
func crashLeaseMode(ctx context.Context, db *sql.DB, l *ledger.Ledger[*sql.Tx], r ledger.Request, effLog, commitLog *os.File) error {
	r.Recover = commitLog != nil
	var c *ledger.Claim
	for {
		var err error
		c, err = l.Claim(ctx, r)
		var inFlight *ledger.InFlightError
		if errors.As(err, &inFlight) {
			time.Sleep(inFlight.RetryAfter)
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	var applied int64
	if c.Replayed() {
		if err := db.QueryRowContext(ctx, "SELECT fence FROM crash_effects WHERE key = ?", r.Key).Scan(&applied); err != nil {
			return fmt.Errorf("replayed effect: %w", err)
		}
		if got := string(c.Replay.Outcome.Body); got != strconv.FormatInt(applied, 10) {
			return fmt.Errorf("replay says %q, the effect was applied under fence %d", got, applied)
		}
		return nil
	}
	if !c.CommittedAt.IsZero() {
		// An earlier run made the effects and marked its commit point:
		// answer from the keyed effect.
		if err := db.QueryRowContext(ctx, "SELECT fence FROM crash_effects WHERE key = ?", r.Key).Scan(&applied); err != nil {
			return fmt.Errorf("recovered effect: %w", err)
		}
		return l.Complete(ctx, c, ledger.Outcome{Status: 200, Body: []byte(strconv.FormatInt(applied, 10))})
	}
	if _, err := fmt.Fprintf(effLog, "%s %d\n", r.Key, c.Fence); err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `INSERT INTO crash_effects (key, fence, seen_fence) VALUES (?1, ?2, ?2)
		ON CONFLICT (key) DO UPDATE SET seen_fence = excluded.seen_fence
		WHERE excluded.seen_fence > crash_effects.seen_fence`, r.Key, c.Fence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("keyed effect refused fence %d (%d rows, %v): a stale owner", c.Fence, n, err)
	}
	if err := db.QueryRowContext(ctx, "SELECT fence FROM crash_effects WHERE key = ?", r.Key).Scan(&applied); err != nil {
		return err
	}
	if commitLog != nil {
		if err := l.Commit(ctx, c); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if _, err := fmt.Fprintf(commitLog, "%s %d\n", r.Key, c.Fence); err != nil {
			return err
		}
		// The work between the effect and the answer (rendering it,
		// say): a window in which kills land, so that recoveries happen.
		time.Sleep(2 * time.Millisecond)
	}
	return l.Complete(ctx, c, ledger.Outcome{Status: 200, Body: []byte(strconv.FormatInt(applied, 10))})
}
