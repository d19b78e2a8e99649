package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/idemledger/idemledger/internal/faultdb"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/sqlite"
)

// faultEnv is one database file seen through two pools: db, plain, to set
// the scene and inspect it, and fdb, through faultdb, for the operation
// under test.
type faultEnv struct {
	db, fdb *sql.DB
	plan    *faultdb.Plan
	l       *ledger.Ledger[*sql.Tx] // on fdb, unprepared (faultdb sees no prepared statement)
	plain   *ledger.Ledger[*sql.Tx] // on db
	clock   *clock
	claim   *ledger.Claim // set by a case's prepare
	runs    int           // how many times a Mutate fn ran
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	db, path := testdb.SQLiteFile(t, sqlite.Options{})
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	f := &faultEnv{db: db, plan: &faultdb.Plan{}, clock: &clock{now: t0}}
	var err error
	if f.fdb, err = faultdb.Open(path, f.plan); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.fdb.Close() })
	f.newLedgers(t)
	return f
}

// reset empties the tables and rewinds the clock.
func (f *faultEnv) reset(t *testing.T) {
	t.Helper()
	f.plan.Disarm()
	if _, err := f.db.Exec("DELETE FROM idempotency_ledger; DELETE FROM orders"); err != nil {
		t.Fatal(err)
	}
	f.clock = &clock{now: t0}
	f.newLedgers(t)
	f.claim, f.runs = nil, 0
}

// on returns a ledger on db with f's clock, unprepared.
func (f *faultEnv) on(t *testing.T, db *sql.DB) *ledger.Ledger[*sql.Tx] {
	t.Helper()
	l, err := ledger.New(sqlite.New(db), ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return l
}

// newLedgers builds the ledgers on fdb and db with f's clock. The one on
// fdb drops its prepared statements at once, so that every statement goes
// through faultdb and is counted.
func (f *faultEnv) newLedgers(t *testing.T) {
	t.Helper()
	cfg := ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: f.clock.Now}
	var err error
	if f.l, err = ledger.New(sqlite.New(f.fdb), cfg); err != nil {
		t.Fatal(err)
	}
	f.l.Close()
	if f.plain, err = ledger.New(sqlite.New(f.db), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.plain.Close() })
}

// snapshot returns every row of both tables, as text, by primary key.
func (f *faultEnv) snapshot(t *testing.T) map[string]string {
	t.Helper()
	rows, err := f.db.Query(`SELECT 'ledger ' || scope || '/' || key, quote(fingerprint) || state ||
		coalesce(lease_token, '-') || coalesce(lease_expires_at, '-') || ' ' || fence || ' ' || coalesce(status, '-') ||
		coalesce(quote(headers), '-') || coalesce(quote(body), '-') || created_at || coalesce(completed_at, '-') || expires_at
		FROM idempotency_ledger
		UNION ALL SELECT 'order ' || id, item FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *faultEnv) orders(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.db.QueryRow("SELECT count(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *faultEnv) record(t *testing.T, key string) *ledger.Record {
	t.Helper()
	r, err := f.plain.Get(context.Background(), "tenant-1", key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var errBusiness = errors.New("the business rule refused the order")

// mutate is a caller of Mutate as the documentation shows it: a
// transaction on db, Mutate inserting an order, a commit. When Mutate
// fails it proves the transaction is still usable by committing a marker
// write, unless Mutate reports that its own rollback failed, in which
// case the caller must roll back (as documented).
func (f *faultEnv) mutate(ctx context.Context, db *sql.DB, key string, fnErr error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = ledger.Mutate(ctx, f.l, tx, req(key, "p"), func(ctx context.Context) (int64, error) {
		f.runs++
		r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", key)
		if err != nil {
			return 0, err
		}
		if fnErr != nil {
			return 0, fnErr
		}
		return r.LastInsertId()
	})
	if err != nil {
		if strings.Contains(err.Error(), "ledger: mutate: rollback:") {
			return err
		}
		if _, merr := tx.ExecContext(context.WithoutCancel(ctx), "CREATE TABLE IF NOT EXISTS marker (x)"); merr != nil {
			return errors.Join(err, fmt.Errorf("transaction unusable after Mutate failed: %w", merr))
		}
		return errors.Join(err, tx.Commit())
	}
	return tx.Commit()
}

// faultCase is one operation: prepare sets the scene through f.db, run
// does the operation through db (f.fdb) and returns nil when it gave the
// answer expected without a fault, and check inspects the end state after
// a successful run.
type faultCase struct {
	name    string
	prepare func(t *testing.T, f *faultEnv)
	run     func(ctx context.Context, f *faultEnv, db *sql.DB) error
	check   func(t *testing.T, f *faultEnv)
	// partial: the operation commits in several steps (Purge's batches),
	// so a fault may leave the earlier steps done; run then reports how
	// many rows it deleted in deleted.
	partial bool
}

var purged int64 // the count returned by the last Purge of a fault case

func faultCases() []faultCase {
	ctx := context.Background()
	claimOn := func(t *testing.T, f *faultEnv, key string) *ledger.Claim {
		t.Helper()
		c, err := f.plain.Claim(ctx, req(key, "p"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	complete := func(t *testing.T, f *faultEnv, c *ledger.Claim) {
		t.Helper()
		if err := f.plain.Complete(ctx, c, ledger.Outcome{Status: 201, Body: []byte("first")}); err != nil {
			t.Fatal(err)
		}
	}
	state := func(want string) func(t *testing.T, f *faultEnv) {
		return func(t *testing.T, f *faultEnv) {
			t.Helper()
			r := f.record(t, "k")
			got := "none"
			if r != nil {
				got = fmt.Sprintf("%v fence %d", r.State, r.Fence)
			}
			if got != want {
				t.Errorf("record of k: %s, want %s", got, want)
			}
		}
	}
	none := func(*testing.T, *faultEnv) {}
	return []faultCase{{
		name:    "Claim new key",
		prepare: none,
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			_, err := f.l.Claim(ctx, req("k", "p"))
			return err
		},
		check: state("in_flight fence 1"),
	}, {
		name:    "Claim replay",
		prepare: func(t *testing.T, f *faultEnv) { complete(t, f, claimOn(t, f, "k")) },
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			c, err := f.l.Claim(ctx, req("k", "p"))
			if err == nil && (!c.Replayed() || string(c.Replay.Outcome.Body) != "first") {
				return fmt.Errorf("claim %+v, want the replay of \"first\"", c)
			}
			return err
		},
		check: state("completed fence 1"),
	}, {
		name:    "Claim in flight",
		prepare: func(t *testing.T, f *faultEnv) { claimOn(t, f, "k") },
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			_, err := f.l.Claim(ctx, req("k", "p"))
			switch {
			case err == nil:
				return errors.New("claim won, want ErrInFlight")
			case errors.Is(err, ledger.ErrInFlight):
				return nil
			}
			return err
		},
		check: state("in_flight fence 1"),
	}, {
		name: "Claim takeover",
		prepare: func(t *testing.T, f *faultEnv) {
			claimOn(t, f, "k")
			f.clock.Advance(time.Minute)
		},
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			_, err := f.l.Claim(ctx, req("k", "p"))
			return err
		},
		check: state("in_flight fence 2"),
	}, {
		name:    "Complete",
		prepare: func(t *testing.T, f *faultEnv) { f.claim = claimOn(t, f, "k") },
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			return f.l.Complete(ctx, f.claim, ledger.Outcome{Status: 200, Header: map[string][]string{"Etag": {`"1"`}}, Body: []byte("b")})
		},
		check: state("completed fence 1"),
	}, {
		name:    "Release",
		prepare: func(t *testing.T, f *faultEnv) { f.claim = claimOn(t, f, "k") },
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			return f.l.Release(ctx, f.claim)
		},
		check: state("none"),
	}, {
		name: "Extend",
		prepare: func(t *testing.T, f *faultEnv) {
			f.claim = claimOn(t, f, "k")
			f.clock.Advance(10 * time.Second)
		},
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			_, err := f.l.Extend(ctx, f.claim)
			return err
		},
		check: func(t *testing.T, f *faultEnv) {
			if r := f.record(t, "k"); r == nil || !r.LeaseExpiresAt.Equal(t0.Add(70*time.Second)) {
				t.Errorf("lease not extended: %+v", r)
			}
		},
	}, {
		name: "Purge",
		prepare: func(t *testing.T, f *faultEnv) {
			for i := range 5 {
				complete(t, f, claimOn(t, f, fmt.Sprint("p", i)))
			}
			f.clock.Advance(time.Hour)
		},
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			var err error
			purged, err = f.l.Purge(ctx, ledger.PurgeOptions{BatchSize: 2})
			return err
		},
		check: func(t *testing.T, f *faultEnv) {
			if n := len(f.snapshot(t)); n != 0 {
				t.Errorf("%d rows left after the purge", n)
			}
		},
		partial: true,
	}, {
		name:    "Get",
		prepare: func(t *testing.T, f *faultEnv) { claimOn(t, f, "k") },
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			_, err := f.l.Get(ctx, "tenant-1", "k")
			return err
		},
		check: state("in_flight fence 1"),
	}, {
		name:    "Mutate first",
		prepare: none,
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			return f.mutate(ctx, db, "k", nil)
		},
		check: func(t *testing.T, f *faultEnv) {
			state("completed fence 1")(t, f)
			if n := f.orders(t); n != 1 {
				t.Errorf("%d orders, want 1", n)
			}
		},
	}, {
		name: "Mutate replay",
		prepare: func(t *testing.T, f *faultEnv) {
			if err := f.mutate(ctx, f.db, "k", nil); err != nil {
				t.Fatal(err)
			}
			f.runs = 0
		},
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			return f.mutate(ctx, db, "k", nil)
		},
		check: func(t *testing.T, f *faultEnv) {
			state("completed fence 1")(t, f)
			if n := f.orders(t); n != 1 || f.runs != 0 {
				t.Errorf("%d orders and %d runs of fn; want 1 order from the first Mutate, no run", n, f.runs)
			}
		},
	}, {
		name:    "Mutate fn fails",
		prepare: none,
		run: func(ctx context.Context, f *faultEnv, db *sql.DB) error {
			err := f.mutate(ctx, db, "k", errBusiness)
			switch {
			case err == nil:
				return errors.New("mutate succeeded, want errBusiness")
			case err.Error() == errBusiness.Error():
				return nil // fn's error, alone and unchanged
			}
			return err
		},
		check: func(t *testing.T, f *faultEnv) {
			state("none")(t, f)
			if n := f.orders(t); n != 0 {
				t.Errorf("%d orders, want none", n)
			}
		},
	}}
}

// eachStatement runs tc once without a fault to list its statements, then,
// for each statement n (1-based), sets the scene again and calls fault,
// which arms the plan, runs tc and checks what it did. After a fault that
// failed the test it logs the statements and stops.
func (f *faultEnv) eachStatement(t *testing.T, tc faultCase, fault func(n int, stmts []string)) {
	t.Helper()
	f.reset(t)
	tc.prepare(t, f)
	f.plan.Count()
	if err := tc.run(context.Background(), f, f.fdb); err != nil {
		t.Fatalf("without a fault: %v", err)
	}
	stmts := f.plan.Seen()
	for n := 1; n <= len(stmts); n++ {
		f.reset(t)
		tc.prepare(t, f)
		fault(n, stmts)
		if t.Failed() {
			t.Logf("statements: %q", stmts)
			t.FailNow()
		}
	}
}

// TestFaultEachStatement makes each statement of each operation fail in
// turn (a one-shot fault: the store recovers at once). The operation must
// return an error wrapping the fault, leave every row as it was (Purge:
// the batches before the fault done, the rest untouched), and succeed when
// run again, with nothing executed twice.
func TestFaultEachStatement(t *testing.T) {
	f := newFaultEnv(t)
	faults := 0
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f.eachStatement(t, tc, func(n int, stmts []string) {
				before := f.snapshot(t)
				f.plan.FailAt(n, nil)
				err := tc.run(ctx, f, f.fdb)
				f.plan.Disarm()
				what := fmt.Sprintf("fault at statement %d of %d (%.50s)", n, len(stmts), oneLine(stmts[n-1]))
				if !f.plan.Fired() {
					t.Fatalf("%s: the statements changed between runs: %q", what, f.plan.Seen())
				}
				faults++
				if !errors.Is(err, faultdb.ErrInjected) {
					t.Errorf("%s: error %v does not wrap the fault", what, err)
				}
				if ledgerStatement(stmts[n-1]) && !strings.Contains(err.Error(), "ledger: ") {
					t.Errorf("%s: error %q lacks the ledger's context", what, err)
				}
				checkUnchanged(t, what, before, f.snapshot(t), tc.partial)
				if err := tc.run(ctx, f, f.fdb); err != nil {
					t.Errorf("%s: retry: %v", what, err)
				}
				tc.check(t, f) // which counts the orders: one at most
			})
		})
	}
	t.Logf("%d faults injected, one per statement of %d operations", faults, len(faultCases()))
}

// TestFaultCancelEachStatement cancels the operation's context just before
// each of its statements in turn. Complete and Release ignore the
// cancellation (documented), so they succeed; every other operation either
// fails with an error wrapping context.Canceled, leaving every row as it
// was, or (Mutate) completes in full; a retry with a live context then
// succeeds, with nothing executed twice.
func TestFaultCancelEachStatement(t *testing.T) {
	f := newFaultEnv(t)
	cancels := 0
	outcomes := map[string]int{}
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			f.eachStatement(t, tc, func(n int, stmts []string) {
				before := f.snapshot(t)
				ctx, cancel := context.WithCancel(context.Background())
				f.plan.CancelAt(n, cancel)
				err := tc.run(ctx, f, f.fdb)
				f.plan.Disarm()
				cancel()
				cancels++
				what := fmt.Sprintf("cancel before statement %d of %d (%.50s)", n, len(stmts), oneLine(stmts[n-1]))
				ignores := tc.name == "Complete" || tc.name == "Release"
				switch {
				case err == nil && ignores:
					outcomes["ignored, as documented"]++
					tc.check(t, f)
					return
				case err == nil && strings.HasPrefix(tc.name, "Mutate"):
					// Everything after the cancelled statement ran without
					// ctx: the whole Mutate committed.
					outcomes["completed in full"]++
					tc.check(t, f)
				case err == nil && tc.name == "Purge" && n == len(stmts) && stmts[n-1] == "COMMIT":
					// A batch whose DELETE ran commits whatever ctx says,
					// and after the last batch there is none to refuse.
					outcomes["completed in full"]++
					tc.check(t, f)
				case err == nil:
					t.Errorf("%s: no error", what)
				case !errors.Is(err, context.Canceled) && !errors.Is(err, sql.ErrTxDone):
					t.Errorf("%s: error %v wraps neither context.Canceled nor sql.ErrTxDone", what, err)
				default:
					outcomes["failed, nothing written"]++
					checkUnchanged(t, what, before, f.snapshot(t), tc.partial)
				}
				if err := tc.run(context.Background(), f, f.fdb); err != nil {
					t.Errorf("%s: retry: %v", what, err)
				}
				tc.check(t, f)
			})
		})
	}
	t.Logf("%d cancellations, one before each statement of %d operations: %v", cancels, len(faultCases()), outcomes)
}

// TestFaultCancelAfterEachStatement ends the operation's context while
// each of its statements runs, in turn: the statement runs to its end and
// then reports the cancellation, as the driver does, so a write may have
// committed behind the error. The operation fails with an error wrapping
// context.Canceled (or succeeds: Complete and Release ignore the
// cancellation, and a Mutate whose COMMIT ran is done), and a retry with a
// live context then gets the answer it would have got at once: in
// particular, a claim cut short never leaves the key in flight under a
// lease nobody holds (Claim ends it), so its retry wins, taking the row
// over (fence + 1) if the first write had committed.
func TestFaultCancelAfterEachStatement(t *testing.T) {
	f := newFaultEnv(t)
	outcomes := map[string]int{}
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			f.eachStatement(t, tc, func(n int, stmts []string) {
				before := f.record(t, "k")
				ctx, cancel := context.WithCancel(context.Background())
				f.plan.CancelAfter(n, cancel)
				err := tc.run(ctx, f, f.fdb)
				f.plan.Disarm()
				cancel()
				what := fmt.Sprintf("cancel during statement %d of %d (%.50s)", n, len(stmts), oneLine(stmts[n-1]))
				if !f.plan.Fired() {
					t.Fatalf("%s: the statements changed between runs: %q", what, f.plan.Seen())
				}
				switch {
				case err == nil:
					// Nothing to retry: it is done.
					outcomes["succeeded"]++
					tc.check(t, f)
					return
				case errors.Is(err, context.Canceled) || errors.Is(err, sql.ErrTxDone):
					outcomes["failed"]++
				default:
					t.Errorf("%s: error %v wraps neither context.Canceled nor sql.ErrTxDone", what, err)
				}
				if r := f.record(t, "k"); r != nil && r.State == ledger.StateInFlight && r.LeaseExpiresAt.After(f.clock.Now()) &&
					(before == nil || r.Fence != before.Fence) {
					t.Errorf("%s: k left in flight under a new lease (fence %d) after %v", what, r.Fence, err)
				}
				// The retry: claims of k win at once, with the fence the
				// first attempt's write, if it committed, makes it.
				err = tc.run(context.Background(), f, f.fdb)
				switch tc.name {
				case "Claim new key", "Claim takeover":
					want := int64(1)
					if before != nil {
						want = before.Fence + 1
					}
					r := f.record(t, "k")
					switch {
					case err != nil:
						t.Errorf("%s: retry: %v", what, err)
					case r.State != ledger.StateInFlight || (r.Fence != want && r.Fence != want+1):
						t.Errorf("%s: after the retry k is %v fence %d, want in flight with fence %d or %d", what, r.State, r.Fence, want, want+1)
					case r.Fence == want+1:
						outcomes["claim retried over an abandoned lease"]++
					}
				default:
					if err != nil {
						t.Errorf("%s: retry: %v", what, err)
					}
					tc.check(t, f)
				}
			})
		})
	}
	t.Logf("cancellations during each statement of %d operations: %v", len(faultCases()), outcomes)
	if outcomes["claim retried over an abandoned lease"] == 0 {
		t.Error("no claim write committed behind a cancellation: the test no longer reaches the case it is for")
	}
}

// checkUnchanged: after equals before, or, for a partial operation, lacks
// exactly the rows it reports deleted and keeps the others intact.
func checkUnchanged(t *testing.T, what string, before, after map[string]string, partial bool) {
	t.Helper()
	for k, v := range after {
		if before[k] != v {
			t.Errorf("%s: row %s written: %q, was %q", what, k, v, before[k])
		}
	}
	missing := len(before) - len(after)
	switch {
	case partial && int64(missing) != purged:
		t.Errorf("%s: %d rows gone, Purge reported %d", what, missing, purged)
	case !partial && missing != 0:
		t.Errorf("%s: %d rows gone: before %v, after %v", what, missing, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// ledgerStatement reports whether the ledger issued stmt (rather than the
// caller's BEGIN and COMMIT, or fn's insert), so that its error must carry
// the ledger's context.
func ledgerStatement(stmt string) bool {
	return stmt != "BEGIN" && stmt != "COMMIT" &&
		!strings.HasPrefix(stmt, "INSERT INTO orders") && !strings.HasPrefix(stmt, "CREATE TABLE IF NOT EXISTS marker")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestFaultClosedPool: every operation on a closed pool fails with the
// ledger's context and database/sql's reason, and writes nothing.
func TestFaultClosedPool(t *testing.T) {
	f := newFaultEnv(t)
	f.claim = f.mustClaim(t, "held")
	f.fdb.Close()
	before := f.snapshot(t)
	for _, tc := range faultCases() {
		if tc.name == "Claim in flight" || tc.name == "Mutate fn fails" {
			continue // their run functions turn the error into a mismatch
		}
		err := tc.run(context.Background(), f, f.fdb)
		if err == nil || !strings.HasSuffix(err.Error(), "sql: database is closed") {
			t.Errorf("%s on a closed pool: %v", tc.name, err)
		}
		if !strings.HasPrefix(tc.name, "Mutate") && !strings.HasPrefix(err.Error(), "ledger: ") {
			t.Errorf("%s: error %q lacks the ledger's context", tc.name, err)
		}
	}
	checkUnchanged(t, "closed pool", before, f.snapshot(t), false)
}

func (f *faultEnv) mustClaim(t *testing.T, key string) *ledger.Claim {
	t.Helper()
	c, err := f.plain.Claim(context.Background(), req(key, "p"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sqliteCode returns the primary SQLite result code in err, or 0.
func sqliteCode(err error) int {
	var e *msqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// TestFaultReadOnly: on a read-only connection every write fails with
// SQLITE_READONLY (reachable with errors.As) and nothing changes; reads
// still work; once the database is writable again the same calls succeed.
func TestFaultReadOnly(t *testing.T) {
	f := newFaultEnv(t)
	ctx := context.Background()
	var path string
	if err := f.db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatal(err)
	}
	ro, err := sql.Open(sqlite.DriverName, "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rol := f.on(t, ro)
	held := f.mustClaim(t, "held")
	before := f.snapshot(t)
	writes := map[string]error{}
	_, writes["Claim"] = rol.Claim(ctx, req("k", "p"))
	writes["Complete"] = rol.Complete(ctx, held, ledger.Outcome{Status: 200})
	_, writes["Extend"] = rol.Extend(ctx, held)
	writes["Release"] = rol.Release(ctx, held)
	f.clock.Advance(2 * time.Hour) // so that "held" has expired
	_, writes["Purge"] = rol.Purge(ctx, ledger.PurgeOptions{})
	f.clock.Advance(-2 * time.Hour)
	for op, err := range writes {
		if sqliteCode(err) != sqlite3.SQLITE_READONLY || !strings.HasPrefix(err.Error(), "ledger: "+strings.ToLower(op)+": ") {
			t.Errorf("%s on a read-only database: %v (code %d), want SQLITE_READONLY wrapped by the ledger", op, err, sqliteCode(err))
		}
	}
	tx, err := ro.BeginTx(ctx, nil)
	if err == nil {
		_, err = ledger.Mutate(ctx, rol, tx, req("m", "p"), func(context.Context) (int, error) { return 1, nil })
		tx.Rollback()
	}
	if sqliteCode(err) != sqlite3.SQLITE_READONLY {
		t.Errorf("Mutate on a read-only database: %v", err)
	}
	if r, err := rol.Get(ctx, "tenant-1", "held"); err != nil || r.Fence != 1 {
		t.Errorf("Get on a read-only database: %+v, %v", r, err)
	}
	checkUnchanged(t, "read-only", before, f.snapshot(t), false)

	// The fault clears: the same calls on a writable pool succeed.
	if _, err := f.l.Claim(ctx, req("k", "p")); err != nil {
		t.Errorf("Claim after: %v", err)
	}
	if err := f.l.Complete(ctx, held, ledger.Outcome{Status: 200}); err != nil {
		t.Errorf("Complete after: %v", err)
	}
}

// TestFaultDatabaseFull caps the file with PRAGMA max_page_count and fills
// it: Claim and Mutate then fail with SQLITE_FULL and leave nothing
// behind, while reads and in-place updates go on; after the cap is raised
// the refused requests succeed, each effect once.
func TestFaultDatabaseFull(t *testing.T) {
	f := newFaultEnv(t)
	ctx := context.Background()
	var path string
	if err := f.db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
		t.Fatal(err)
	}
	// max_page_count belongs to the connection: one connection, so that
	// every statement sees the cap.
	db, err := sqlite.Options{MaxOpenConns: 1}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dl := f.on(t, db)
	var pages int
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	var held []*ledger.Claim
	var full error
	for i := range 10000 {
		c, err := dl.Claim(ctx, req(fmt.Sprint("fill-", i), "p"))
		if err != nil {
			full = err
			break
		}
		held = append(held, c)
	}
	if sqliteCode(full) != sqlite3.SQLITE_FULL || !strings.HasPrefix(full.Error(), "ledger: claim: ") {
		t.Fatalf("filling the database: %d claims, then %v; want SQLITE_FULL wrapped by the ledger", len(held), full)
	}
	t.Logf("the database took %d claims", len(held))
	refused := fmt.Sprint("fill-", len(held))
	if r := f.record(t, refused); r != nil {
		t.Errorf("the refused claim left a row: %+v", r)
	}
	before := f.snapshot(t)
	// Mutate whose fn writes a large row: fn gets SQLITE_FULL, Mutate
	// returns it unchanged and rolls back to its savepoint; the caller's
	// transaction commits nothing of it.
	big := strings.Repeat("x", 64<<10)
	err = f.mutateItem(ctx, db, "m", big)
	if sqliteCode(err) != sqlite3.SQLITE_FULL {
		t.Errorf("Mutate on a full database: %v", err)
	}
	checkUnchanged(t, "full", before, f.snapshot(t), false)
	// Reads work; an in-place update (Extend) does not need a new page.
	if _, err := dl.Get(ctx, "tenant-1", "fill-0"); err != nil {
		t.Errorf("Get on a full database: %v", err)
	}
	if _, err := dl.Extend(ctx, held[0]); err != nil {
		t.Errorf("Extend on a full database: %v", err)
	}

	// The fault clears.
	if _, err := db.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if _, err := dl.Claim(ctx, req(refused, "p")); err != nil {
		t.Errorf("Claim after: %v", err)
	}
	if err := f.mutateItem(ctx, db, "m", big); err != nil {
		t.Errorf("Mutate after: %v", err)
	}
	// fn ran once or twice: the first Mutate's claim may itself not have
	// fit in the full file (then fn never ran), and whether it did
	// depends on the bytes left on the last page. Either way exactly one
	// order stands.
	if n, runs := f.orders(t), f.runs; n != 1 || runs < 1 || runs > 2 {
		t.Errorf("%d orders from %d runs of fn; want 1 order (a first run rolled back)", n, runs)
	}
}

// mutateItem is f.mutate with the order's item given.
func (f *faultEnv) mutateItem(ctx context.Context, db *sql.DB, key, item string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = ledger.Mutate(ctx, f.l, tx, req(key, "p"), func(ctx context.Context) (int64, error) {
		f.runs++
		r, err := tx.ExecContext(ctx, "INSERT INTO orders (item) VALUES (?)", item)
		if err != nil {
			return 0, err
		}
		return r.LastInsertId()
	})
	if err != nil {
		return errors.Join(err, tx.Commit()) // the transaction is still usable
	}
	return tx.Commit()
}

// TestMutateReleaseFailureLeavesNothing is the regression test of a bug
// the fault tests found: when RELEASE SAVEPOINT failed after fn and the
// completion had run, Mutate returned the error but left the savepoint
// open, so a caller that went on and committed tx committed fn's order
// and the completed record of a Mutate that had reported failure.
func TestMutateReleaseFailureLeavesNothing(t *testing.T) {
	f := newFaultEnv(t)
	ctx := context.Background()
	f.plan.Count()
	if err := f.mutate(ctx, f.fdb, "probe", nil); err != nil {
		t.Fatal(err)
	}
	release := slices.IndexFunc(f.plan.Seen(), func(s string) bool { return strings.HasPrefix(s, "RELEASE SAVEPOINT") })
	if release < 0 {
		t.Fatalf("no RELEASE among %q", f.plan.Seen())
	}
	f.reset(t)
	f.plan.FailAt(release+1, nil)
	// f.mutate commits tx after Mutate's error (it is not a rollback
	// failure), as a caller that keeps using its transaction would.
	err := f.mutate(ctx, f.fdb, "k", nil)
	f.plan.Disarm()
	if !errors.Is(err, faultdb.ErrInjected) || !strings.HasPrefix(err.Error(), "ledger: mutate: ") {
		t.Fatalf("Mutate = %v, want the RELEASE fault wrapped", err)
	}
	if r, n := f.record(t, "k"), f.orders(t); r != nil || n != 0 {
		t.Fatalf("after a failed Mutate and a commit: record %+v, %d orders; want neither", r, n)
	}
}

// TestPurgeCountUnderCancellation: whichever statement of a Purge ctx ends
// in (the driver reporting the cancellation after the statement ran, as
// modernc does), the count Purge returns is the number of rows gone.
func TestPurgeCountUnderCancellation(t *testing.T) {
	f := newFaultEnv(t)
	const rows, batch = 25, 10
	fill := func(t *testing.T) {
		t.Helper()
		f.reset(t)
		exp := t0.Add(-time.Hour).UnixMilli()
		if _, err := f.db.Exec(`
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO idempotency_ledger (scope, key, fingerprint, state, fence, status, body, created_at, completed_at, expires_at)
			SELECT 's', 'key-' || i, randomblob(32), 'completed', 1, 200, x'7b7d', ? - 1000, ? - 1000, ?
			FROM n`, rows, exp, exp, exp); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func(t *testing.T) int64 {
		t.Helper()
		var n int64
		if err := f.db.QueryRow("SELECT count(*) FROM idempotency_ledger").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	opts := ledger.PurgeOptions{BatchSize: batch}

	fill(t)
	f.plan.Count()
	if n, err := f.l.Purge(context.Background(), opts); n != rows || err != nil {
		t.Fatalf("Purge = %d, %v; want %d, nil", n, err, rows)
	}
	stmts := f.plan.Seen()
	f.plan.Disarm()

	cut := 0 // cancellations that stopped Purge before the end
	for i := range stmts {
		fill(t)
		ctx, cancel := context.WithCancel(context.Background())
		f.plan.CancelAfter(i+1, cancel)
		n, err := f.l.Purge(ctx, opts)
		f.plan.Disarm()
		cancel()
		what := fmt.Sprintf("cancelled during statement %d of %d (%.40s)", i+1, len(stmts), oneLine(stmts[i]))
		if !f.plan.Fired() {
			t.Fatalf("%s: the statements changed between runs: %q", what, f.plan.Seen())
		}
		if err != nil {
			cut++
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: error %v does not wrap context.Canceled", what, err)
			}
		}
		if gone := rows - remaining(t); n != gone {
			t.Errorf("%s: Purge = %d, %v; %d rows are gone", what, n, err, gone)
		}
	}
	if cut == 0 {
		t.Error("no cancellation stopped Purge: the test no longer reaches the case it is for")
	}
}
