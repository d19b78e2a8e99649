package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// The cut tests: every lease-mode statement has its connection
// cut before the request, after it (the server ran it, the reply is lost)
// and mid-reply, on PostgreSQL through a TCP proxy (internal/faultnet);
// on SQLite each statement of the operation fails with SQLITE_IOERR
// before or after it ran, and with SQLITE_FULL (internal/faultdb). After
// each cut the rules hold:
//
//   - a claim that failed never leaves its key locked: the retry wins at
//     once (a claim that succeeded holds it, under its live lease);
//   - Commit, Complete, Release and Extend end as if nothing had happened
//     when the fault is transient (the operation retried it), and the
//     record shows it: committed, completed and replayed, gone, extended;
//   - a record marked committed is never taken over: past its lease a
//     retry gets ErrCommitted, and runs again only with Recover.

// cut is a way to break the next statement of an operation.
type cut struct {
	name string
	// arm breaks a statement: on PostgreSQL the next one that carries
	// marker, on SQLite the n-th from now.
	arm func(marker string, n int)
	// transient is false when the fault is not one the ledger retries
	// (SQLITE_FULL): the operation then fails and the caller may retry.
	transient bool
}

// cutRig is a ledger whose every statement goes through a cutter, beside
// a clean view of the same database for assertions.
type cutRig[TTx any] struct {
	d      *testdb.DB[TTx]
	drv    driver.Driver[TTx] // the driver whose statements are cut
	l      *ledger.Ledger[TTx]
	clean  *ledger.Ledger[TTx]
	clock  *clock
	cuts   []cut
	fired  func() bool
	disarm func()
	// commit is the marker of the client's COMMIT.
	commit string
	// perStatement is true on SQLite, where a cut names a statement by
	// its rank in the operation, so the test tries every rank.
	perStatement bool
}

func newCutRig[TTx any](t *testing.T, d *testdb.DB[TTx]) *cutRig[TTx] {
	t.Helper()
	clk := &clock{now: t0}
	opts := ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: clk.Now}
	f := testdb.NewFaulty(t, d, 0)
	rig := &cutRig[TTx]{d: d, drv: f.Driver, clock: clk, fired: f.Fired, disarm: f.Disarm, commit: f.Commit}
	if plan := f.Plan; plan != nil {
		rig.perStatement = true
		rig.cuts = []cut{
			{"IOERR before", func(_ string, n int) { plan.FailAt(n, f.IOErr) }, true},
			{"IOERR after", func(_ string, n int) { plan.FailAfter(n, f.IOErr) }, true},
			{"FULL", func(_ string, n int) { plan.FailAt(n, f.Full) }, false},
		}
	} else {
		for _, at := range []faultnet.Point{faultnet.BeforeRequest, faultnet.AfterRequest, faultnet.MidReply} {
			rig.cuts = append(rig.cuts, cut{at.String(), func(marker string, _ int) { f.Proxy.Arm([]byte(marker), at) }, true})
		}
	}
	var err error
	// Unprepared, so that every statement is seen by the cutter.
	if rig.l, err = ledger.New(rig.drv, opts); err != nil {
		t.Fatal(err)
	}
	rig.l.Close()
	if rig.clean, err = ledger.New(d.Driver, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rig.clean.Close() })
	return rig
}

func TestCutConnections(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testCutConnections(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testCutConnections(t, d) })
}

func testCutConnections[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	rig := newCutRig(t, d)
	ctx := context.Background()
	seq, cuts := 0, 0
	defer func() { t.Logf("%d cuts", cuts) }()
	for _, c := range rig.cuts {
		for _, op := range []string{"claim", "commit", "complete", "release", "extend"} {
			// On SQLite every rank of the operation's statements in turn,
			// until a rank past its last one (the fault did not fire).
			for n := 1; ; n++ {
				seq++
				key := fmt.Sprintf("cut-%d", seq)
				r := req(key, "p")
				var held *ledger.Claim
				if op != "claim" {
					var err error
					if held, err = rig.l.Claim(ctx, r); err != nil {
						t.Fatalf("%s %s: claim before the cut: %v", c.name, op, err)
					}
				}
				marker := key
				if held != nil {
					marker = held.Token // in every statement of the lease, and only there
				}
				c.arm(marker, n)
				err := cutOp(ctx, rig.l, op, r, held)
				fired := rig.fired()
				rig.disarm()
				if !fired {
					if n == 1 {
						t.Fatalf("%s %s: the cut never fired (%v)", c.name, op, err)
					}
					break
				}
				checkAfterCut(t, fmt.Sprintf("%s %s #%d", c.name, op, n), rig, c, op, r, held, err)
				cuts++
				if !rig.perStatement {
					break
				}
			}
		}
	}
}

// cutOp runs the operation under test.
func cutOp[TTx any](ctx context.Context, l *ledger.Ledger[TTx], op string, r ledger.Request, held *ledger.Claim) error {
	switch op {
	case "claim":
		_, err := l.Claim(ctx, r)
		return err
	case "commit":
		return l.Commit(ctx, held)
	case "complete":
		return l.Complete(ctx, held, ledger.Outcome{Status: 201, Body: []byte("paid " + r.Key)})
	case "release":
		return l.Release(ctx, held)
	case "extend":
		_, err := l.Extend(ctx, held)
		return err
	}
	panic(op)
}

// checkAfterCut asserts the rules of the package comment above for one
// cut; err is the operation's.
func checkAfterCut[TTx any](t *testing.T, what string, rig *cutRig[TTx], c cut, op string, r ledger.Request, held *ledger.Claim, err error) {
	t.Helper()
	ctx := context.Background()
	if op == "claim" {
		again, err2 := rig.clean.Claim(ctx, r)
		switch {
		case err != nil && err2 != nil:
			t.Errorf("%s: the claim failed (%v) and its retry too: %v; want the retry to win at once", what, err, err2)
		case err == nil && !errors.Is(err2, ledger.ErrInFlight):
			t.Errorf("%s: the claim won, then its retry got %v, %v; want ErrInFlight under the live lease", what, again, err2)
		}
		return
	}
	if err != nil {
		if c.transient {
			t.Errorf("%s: %v; want the transient fault retried away", what, err)
			return
		}
		// A fault the ledger does not retry: the lease still holds, and the
		// caller's own retry succeeds once the fault clears.
		if err2 := cutOp(ctx, rig.clean, op, r, held); err2 != nil {
			t.Errorf("%s: failed with %v, then the caller's retry with %v", what, err, err2)
			return
		}
	}
	rec, gerr := rig.clean.Get(ctx, r.Scope, r.Key)
	switch op {
	case "commit":
		if gerr != nil || rec.CommittedAt.IsZero() || rec.State != ledger.StateInFlight || rec.Fence != held.Fence {
			t.Errorf("%s: record %+v, %v; want in flight under fence %d with a commit mark", what, rec, gerr, held.Fence)
			return
		}
		// The holder vanishes: past its lease, a retry learns the effect
		// happened, and only a recovery runs again, knowing it.
		rig.clock.Advance(2 * time.Minute)
		_, err := rig.clean.Claim(ctx, r)
		var ce *ledger.CommittedError
		if !errors.As(err, &ce) || ce.Fence != held.Fence || !ce.CommittedAt.Equal(rec.CommittedAt) {
			t.Errorf("%s: retry after the lease: %v; want a *CommittedError of fence %d at %v", what, err, held.Fence, rec.CommittedAt)
		}
		rr := r
		rr.Recover = true
		rc, err := rig.clean.Claim(ctx, rr)
		if err != nil || rc.Fence != held.Fence+1 || !rc.CommittedAt.Equal(rec.CommittedAt) {
			t.Errorf("%s: recovery: %+v, %v; want fence %d knowing the mark of %v", what, rc, err, held.Fence+1, rec.CommittedAt)
		}
	case "complete":
		rc, err := rig.clean.Claim(ctx, r)
		if err != nil || !rc.Replayed() || string(rc.Replay.Outcome.Body) != "paid "+r.Key || rc.Replay.Outcome.Status != 201 {
			t.Errorf("%s: retry: %+v, %v; want the replay of 201 %q", what, rc, err, "paid "+r.Key)
		}
	case "release":
		if !errors.Is(gerr, ledger.ErrNotFound) {
			t.Errorf("%s: record %+v, %v; want it released", what, rec, gerr)
		}
	case "extend":
		if gerr != nil || rec.State != ledger.StateInFlight || !rec.LeaseExpiresAt.Equal(held.LeaseExpiresAt) {
			t.Errorf("%s: record %+v, %v; want in flight until %v", what, rec, gerr, held.LeaseExpiresAt)
		}
	}
}

// TestCutMutate cuts the connection of each statement of the Mutate path
// (BEGIN, the savepoint and the claim, fn's insert, the completion and
// RELEASE, the caller's COMMIT) on every driver. The unit of work is the
// caller's whole transaction: when it fails, the caller runs it again on
// a sound connection. Held: exactly one order per key, and the record
// replays that order's id, whichever statement was cut and whether or not
// the cut COMMIT had committed.
func TestCutMutate(t *testing.T) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { testCutMutate(t, d) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { testCutMutate(t, d) })
}

func testCutMutate[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	rig := newCutRig(t, d)
	if _, err := d.SQL.Exec(ordersTable(d)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// unit is the caller's transaction: begin, Mutate inserting an order,
	// commit. hook runs just before the COMMIT.
	unit := func(drv driver.Driver[TTx], l *ledger.Ledger[TTx], r ledger.Request, item string, hook func()) (int64, error) {
		tx, err := drv.Begin(ctx)
		if err != nil {
			return 0, err
		}
		defer drv.Rollback(ctx, tx)
		res, err := ledger.Mutate(ctx, l, tx, r, func(ctx context.Context) (int64, error) {
			return d.QueryInt(ctx, tx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", item)
		})
		if err != nil {
			return 0, err
		}
		hook()
		return res.Value, drv.Commit(ctx, tx)
	}
	seq, cuts := 0, 0
	defer func() { t.Logf("%d cuts", cuts) }()
	for _, c := range rig.cuts {
		// On PostgreSQL each statement is named by a marker it alone
		// carries; "commit" is armed just before the COMMIT is sent.
		points := []string{"key", "item", "commit"}
		if rig.perStatement {
			points = []string{"rank"}
		}
		for _, point := range points {
			for n := 1; ; n++ {
				seq++
				key, item := fmt.Sprintf("mutate-%d", seq), fmt.Sprintf("item-%d", seq)
				r := req(key, "p")
				hook := func() {}
				switch point {
				case "key":
					c.arm(key, 0)
				case "item":
					c.arm(item, 0)
				case "commit":
					hook = func() { c.arm(rig.commit, 0) }
				case "rank":
					c.arm("", n)
				}
				_, err := unit(rig.drv, rig.l, r, item, hook)
				fired := rig.fired()
				rig.disarm()
				what := fmt.Sprintf("%s %s #%d", c.name, point, n)
				if !fired {
					if n == 1 {
						t.Fatalf("%s: the cut never fired (%v)", what, err)
					}
					break
				}
				if err != nil {
					// The caller runs its transaction again, on a sound
					// connection.
					if _, err2 := unit(d.Driver, rig.clean, r, item, func() {}); err2 != nil {
						t.Errorf("%s: failed with %v, then its retry with %v", what, err, err2)
						continue
					}
				}
				cuts++
				var orders, id int64
				if err := d.SQL.QueryRow(testdb.Rebind(d.Engine, "SELECT count(*), COALESCE(max(id), 0) FROM orders WHERE item = ?"), item).Scan(&orders, &id); err != nil {
					t.Fatal(err)
				}
				tx := d.Begin(t)
				replayed, err := ledger.Mutate(ctx, rig.clean, tx, r, func(context.Context) (int64, error) {
					return 0, errors.New("fn ran for a key whose transaction committed")
				})
				d.Rollback(t, tx)
				if orders != 1 || err != nil || !replayed.Replayed || replayed.Value != id {
					t.Errorf("%s: %d orders (id %d), replay %+v, %v; want one order, replayed", what, orders, id, replayed, err)
				}
				if point != "rank" {
					break
				}
			}
		}
	}
}
