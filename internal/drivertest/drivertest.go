// Package drivertest is the conformance suite of the driver boundary
// (package driver): Exercise tests a driver's Executor contract directly,
// below the ledger, on a real database. Each driver's own package test
// calls it once (pgxv5 once per pgx query mode), as River's
// riverdrivertest is called by each of its drivers; the behaviour tests
// above the boundary run on every driver through internal/testdb.
package drivertest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/faultnet"
	"github.com/idemledger/idemledger/internal/testdb"
)

// Hooks are the engine's own ways to make a fault that the suite cannot
// make the same way on every engine; nil skips that case, saying so.
type Hooks[TTx any] struct {
	// Retryable makes one statement of the driver fail with a
	// conflict the engine rolls back (a serialization failure, a lock not
	// granted), and returns that error.
	Retryable func(t *testing.T, d *testdb.DB[TTx]) error
}

// Exercise runs the suite on databases made by fresh (a migrated database
// per call, reached through the driver under test).
func Exercise[TTx any](t *testing.T, fresh func(t *testing.T) *testdb.DB[TTx], hooks Hooks[TTx]) {
	t.Run("RowRoundTrip", func(t *testing.T) { rowRoundTrip(t, fresh(t)) })
	t.Run("LeaseGuards", func(t *testing.T) { leaseGuards(t, fresh(t)) })
	t.Run("Takeover", func(t *testing.T) { takeover(t, fresh(t)) })
	t.Run("ValidUntil", func(t *testing.T) { validUntil(t, fresh(t)) })
	t.Run("Released", func(t *testing.T) { released(t, fresh(t)) })
	t.Run("PurgeAndStats", func(t *testing.T) { purgeAndStats(t, fresh(t)) })
	t.Run("PurgeKeyset", func(t *testing.T) { purgeKeyset(t, fresh(t)) })
	t.Run("Clock", func(t *testing.T) { clock(t, fresh(t)) })
	t.Run("Steps", func(t *testing.T) { steps(t, fresh(t)) })
	t.Run("TxDone", func(t *testing.T) { txDone(t, fresh(t)) })
	t.Run("BatchedEqualsUnbatched", func(t *testing.T) { batched(t, fresh(t)) })
	t.Run("ErrNotMigrated", func(t *testing.T) { notMigrated(t, fresh(t)) })
	t.Run("Catalog", func(t *testing.T) { catalog(t, fresh(t)) })
	t.Run("ErrOutcomeUnknown", func(t *testing.T) { outcomeUnknown(t, fresh(t)) })
	t.Run("ErrRetryable", func(t *testing.T) {
		if hooks.Retryable == nil {
			t.Skip("the driver's test gives no way to make a conflict")
		}
		err := hooks.Retryable(t, fresh(t))
		if !errors.Is(err, driver.ErrRetryable) {
			t.Fatalf("conflict: %v; want an error marked driver.ErrRetryable", err)
		}
	})
}

// t0 is the suite's clock, in Unix milliseconds: every statement takes it
// as Now, so that the answers are exact.
const t0 = int64(1_800_000_000_000)

var fp = bytes.Repeat([]byte{0xab}, 32)

func claimParams(key, token string, now int64) driver.ClaimParams {
	return driver.ClaimParams{Scope: "s", Key: key, Fingerprint: fp, Token: token, LeaseMillis: 1000, TTLMillis: 10_000, Now: now}
}

// must(f())(t) is f's value, or the end of the test on f's error.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// rowRoundTrip: every Row field is written and read back exactly, through
// Claim, MarkCommitted, Complete, Get, FindKey and ListInFlight.
func rowRoundTrip[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	won := must(ex.Claim(ctx, claimParams("k", "tok-1", t0)))(t)
	if !won.Won || won.Fence != 1 || won.LeaseExpiresAt != t0+1000 || won.CommittedAt != 0 {
		t.Fatalf("first claim: %+v; want won, fence 1, lease until %d", won, t0+1000)
	}
	lease := driver.LeaseParams{Scope: "s", Key: "k", Token: "tok-1", Fence: 1}
	inflight := must(ex.ListInFlight(ctx, 10))(t)
	want := driver.Row{Scope: "s", Key: "k", Fingerprint: fp, State: "in_flight", LeaseToken: "tok-1",
		LeaseExpiresAt: t0 + 1000, Fence: 1, CreatedAt: t0, ExpiresAt: t0 + 10_000}
	if len(inflight) != 1 || !rowEqual(inflight[0], want) {
		t.Fatalf("ListInFlight: %+v; want [%+v]", inflight, want)
	}
	if ok := must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: lease, Now: t0 + 5}))(t); !ok {
		t.Fatal("MarkCommitted of the held lease: not held")
	}
	// A second mark keeps the first time.
	if ok := must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: lease, Now: t0 + 9}))(t); !ok {
		t.Fatal("second MarkCommitted: not held")
	}
	headers := []byte("{\"Content-Type\":[\"text/plain\"],\"X-\xff\":[\"\\u0000\"]}")
	body := []byte{0, 1, 2, 0xff}
	res := must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: lease, Kind: "http", Status: 201, Headers: headers, Body: body, TTLMillis: 20_000, Now: t0 + 10}))(t)
	if !res.OK {
		t.Fatal("Complete of the held lease: not held")
	}
	// On the pool every driver reports the time it stored (the ledger's
	// cache keeps the record from it); the mark, when it says it knows it.
	if res.CompletedAt != t0+10 || (res.Marked && res.CommittedAt != t0+5) || (!res.Marked && res.CommittedAt != 0) {
		t.Fatalf("Complete = %+v, want completed at %d, marked at %d or not reported", res, t0+10, t0+5)
	}
	got := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "k", Now: t0 + 11}))(t)
	want = driver.Row{Scope: "s", Key: "k", Fingerprint: fp, State: "completed", Fence: 1, Status: 201,
		Headers: headers, Body: body, CreatedAt: t0, CompletedAt: t0 + 10, ExpiresAt: t0 + 20_010, CommittedAt: t0 + 5, Kind: "http"}
	if got.Row == nil || !rowEqual(*got.Row, want) || got.Now != t0+11 {
		t.Fatalf("Get: %+v at %d; want %+v at %d", got.Row, got.Now, want, t0+11)
	}
	// A claim that loses to the completed row returns it whole, as Get
	// reads it, with the clock at or after the read.
	lost := must(ex.Claim(ctx, claimParams("k", "tok-lost", t0+12)))(t)
	if lost.Won || (lost.Row != nil && (!rowEqual(*lost.Row, want) || lost.Now != t0+12)) {
		t.Fatalf("claim of the completed row: %+v (row %+v); want it lost, with the row %+v at %d", lost, lost.Row, want, t0+12)
	}
	found := must(ex.FindKey(ctx, "k", 10))(t)
	if len(found) != 1 || !rowEqual(found[0], want) {
		t.Fatalf("FindKey: %+v", found)
	}
	if miss := must(ex.Get(ctx, driver.GetParams{Scope: "other", Key: "k", Now: t0}))(t); miss.Row != nil {
		t.Fatalf("Get of another scope: %+v; want no row", miss.Row)
	}
	// A nil Headers is stored as NULL and read back as nil, an empty Kind
	// as NULL and read back as "".
	must(ex.Claim(ctx, claimParams("n", "tok-n", t0)))(t)
	must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: "n", Token: "tok-n", Fence: 1}, Status: 200, TTLMillis: 1, Now: t0}))(t)
	if g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "n", Now: t0}))(t); g.Row.Headers != nil || len(g.Row.Body) != 0 || g.Row.Kind != "" {
		t.Fatalf("nil headers and body, no kind: %+v", g.Row)
	}
}

func rowEqual(a, b driver.Row) bool {
	return a.Scope == b.Scope && a.Key == b.Key && bytes.Equal(a.Fingerprint, b.Fingerprint) && a.State == b.State &&
		a.LeaseToken == b.LeaseToken && a.LeaseExpiresAt == b.LeaseExpiresAt && a.Fence == b.Fence &&
		a.Status == b.Status && bytes.Equal(a.Headers, b.Headers) && bytes.Equal(a.Body, b.Body) &&
		a.CreatedAt == b.CreatedAt && a.CompletedAt == b.CompletedAt && a.ExpiresAt == b.ExpiresAt && a.CommittedAt == b.CommittedAt &&
		a.Kind == b.Kind
}

// leaseGuards: Complete, Release, Extend and MarkCommitted act only for the
// holder (token and fence); Release never deletes a marked record.
func leaseGuards[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	must(ex.Claim(ctx, claimParams("k", "tok", t0)))(t)
	held := driver.LeaseParams{Scope: "s", Key: "k", Token: "tok", Fence: 1}
	for _, other := range []driver.LeaseParams{
		{Scope: "s", Key: "k", Token: "other", Fence: 1},
		{Scope: "s", Key: "k", Token: "tok", Fence: 2},
	} {
		if res := must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: other, Status: 1, TTLMillis: 1, Now: t0}))(t); res != (driver.CompleteResult{}) {
			t.Errorf("Complete with %+v: held", other)
		}
		if ok := must(ex.Release(ctx, driver.ReleaseParams{LeaseParams: other, LeaseMillis: 1000}))(t); ok {
			t.Errorf("Release with %+v: held", other)
		}
		if _, ok, err := ex.Extend(ctx, driver.ExtendParams{LeaseParams: other, LeaseMillis: 1, Now: t0}); ok || err != nil {
			t.Errorf("Extend with %+v: %t, %v", other, ok, err)
		}
		if ok := must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: other, Now: t0}))(t); ok {
			t.Errorf("MarkCommitted with %+v: held", other)
		}
	}
	until, ok, err := ex.Extend(ctx, driver.ExtendParams{LeaseParams: held, LeaseMillis: 5000, Now: t0 + 100})
	if !ok || err != nil || until != t0+5100 {
		t.Fatalf("Extend: %d, %t, %v; want %d", until, ok, err, t0+5100)
	}
	must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: held, Now: t0}))(t)
	if ok := must(ex.Release(ctx, driver.ReleaseParams{LeaseParams: held, LeaseMillis: 1000}))(t); ok {
		t.Fatal("Release of a marked record released it")
	}
	if g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "k", Now: t0}))(t); g.Row == nil {
		t.Fatal("the marked record is gone")
	}
	// Unmarked, the holder releases it.
	must(ex.Claim(ctx, claimParams("r", "tok-r", t0)))(t)
	if ok := must(ex.Release(ctx, driver.ReleaseParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: "r", Token: "tok-r", Fence: 1}, LeaseMillis: 1000}))(t); !ok {
		t.Fatal("Release of the held lease: not held")
	}
	// Abandon ends the lease at once, whatever the fence: a retry takes the
	// row over without waiting.
	must(ex.Claim(ctx, claimParams("a", "tok-a", t0)))(t)
	if err := ex.Abandon(ctx, driver.LeaseParams{Scope: "s", Key: "a", Token: "tok-a"}); err != nil {
		t.Fatal(err)
	}
	if r := must(ex.Claim(ctx, claimParams("a", "tok-b", t0)))(t); !r.Won || r.Fence != 2 {
		t.Fatalf("claim after Abandon: %+v; want won, fence 2", r)
	}
}

// released: Release leaves the row released, with its fence, its
// fingerprint and one more failure, expiring no earlier than a lease after
// its lease; any claim takes it over at once, continuing the fence, and
// the failures when the fingerprint is the same; Stats counts it apart;
// Purge leaves it until it expires; FindKey does not list it.
func released[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	release := func(key, token string, fence int64) {
		t.Helper()
		p := driver.ReleaseParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: key, Token: token, Fence: fence}, LeaseMillis: 1000}
		if ok := must(ex.Release(ctx, p))(t); !ok {
			t.Fatalf("Release of %s at fence %d: not held", key, fence)
		}
	}
	// A short TTL: the release moves the expiry past the lease's end plus
	// a lease (t0+1000+1000), beyond the claim's t0+500.
	short := claimParams("k", "t1", t0)
	short.TTLMillis = 500
	must(ex.Claim(ctx, short))(t)
	release("k", "t1", 1)
	g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "k", Now: t0 + 1}))(t)
	want := driver.Row{Scope: "s", Key: "k", Fingerprint: fp, State: "released", LeaseExpiresAt: t0 + 1000,
		Fence: 1, CreatedAt: t0, ExpiresAt: t0 + 2000, Failures: 1}
	if g.Row == nil || !reflect.DeepEqual(*g.Row, want) {
		t.Fatalf("released row:\n got %+v\nwant %+v", g.Row, want)
	}
	if n := must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: t0 + 1999, Limit: 10}))(t); n.Deleted != 0 {
		t.Fatalf("purge a lease after the lease's end less 1 ms deleted %d rows", n.Deleted)
	}
	if st := must(ex.Stats(ctx, t0+1))(t); st.InFlight != 0 || st.Completed != 0 || st.Released != 1 {
		t.Fatalf("Stats: %+v; want 1 released, nothing else", st)
	}
	if got := must(ex.FindKey(ctx, "k", 10))(t); len(got) != 0 {
		t.Fatalf("FindKey listed %d released rows", len(got))
	}
	// The same fingerprint at once: fence 2, the failure counted on.
	if r := must(ex.Claim(ctx, claimParams("k", "t2", t0+1)))(t); !r.Won || r.Fence != 2 || r.Failures != 1 {
		t.Fatalf("claim of the released row: %+v; want won, fence 2, 1 failure", r)
	}
	release("k", "t2", 2)
	if r := must(ex.Claim(ctx, claimParams("k", "t3", t0+2)))(t); !r.Won || r.Fence != 3 || r.Failures != 2 {
		t.Fatalf("claim after the second release: %+v; want won, fence 3, 2 failures", r)
	}
	release("k", "t3", 3)
	// Another fingerprint: taken over too, the count starts again.
	other := claimParams("k", "t4", t0+3)
	other.Fingerprint = bytes.Repeat([]byte{0xcd}, 32)
	if r := must(ex.Claim(ctx, other))(t); !r.Won || r.Fence != 4 || r.Failures != 0 {
		t.Fatalf("claim with another fingerprint: %+v; want won, fence 4, 0 failures", r)
	}
	release("k", "t4", 4)
	// Purge leaves it until it expires (here the claim's TTL, later than
	// a lease after the lease's end).
	if n := must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: t0 + 10_002, Limit: 10}))(t); n.Deleted != 0 {
		t.Fatalf("purge before the expiry deleted %d rows", n.Deleted)
	}
	if n := must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: t0 + 10_003, Limit: 10}))(t); n.Deleted != 1 {
		t.Fatalf("purge at the expiry deleted %d rows, want 1", n.Deleted)
	}
}

// takeover: a live lease stands; a lease that ran out is taken over with
// the same fingerprint, not another one; a marked record only with
// Recover, which keeps the mark; an expired record by anyone, without it.
func takeover[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	must(ex.Claim(ctx, claimParams("k", "t1", t0)))(t)
	if r := must(ex.Claim(ctx, claimParams("k", "t2", t0+999)))(t); r.Won || r.Row == nil || r.Row.LeaseToken != "t1" || r.Now != t0+999 {
		t.Fatalf("claim under a live lease: %+v; want the standing row as read at %d", r, t0+999)
	}
	other := claimParams("k", "t3", t0+1000)
	other.Fingerprint = bytes.Repeat([]byte{1}, 32)
	if r := must(ex.Claim(ctx, other))(t); r.Won {
		t.Fatal("another fingerprint took an unexpired record over")
	}
	r := must(ex.Claim(ctx, claimParams("k", "t4", t0+1000)))(t)
	if !r.Won || r.Fence != 2 {
		t.Fatalf("takeover after the lease: %+v; want fence 2", r)
	}
	must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: "k", Token: "t4", Fence: 2}, Now: t0 + 1500}))(t)
	if r := must(ex.Claim(ctx, claimParams("k", "t5", t0+3000)))(t); r.Won {
		t.Fatal("a marked record was taken over without Recover")
	}
	rec := claimParams("k", "t6", t0+3000)
	rec.Recover = true
	if r := must(ex.Claim(ctx, rec))(t); !r.Won || r.Fence != 3 || r.CommittedAt != t0+1500 {
		t.Fatalf("recovery: %+v; want fence 3 keeping the mark of %d", r, t0+1500)
	}
	// Past the TTL (and the lease) anyone takes it over, mark cleared.
	late := claimParams("k", "t7", t0+20_000)
	late.Fingerprint = other.Fingerprint
	if r := must(ex.Claim(ctx, late))(t); !r.Won || r.Fence != 4 || r.CommittedAt != 0 {
		t.Fatalf("takeover of an expired record: %+v; want fence 4, no mark", r)
	}
	if g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "k", Now: t0 + 20_000}))(t); g.Row.CommittedAt != 0 || !bytes.Equal(g.Row.Fingerprint, other.Fingerprint) {
		t.Fatalf("after expiry takeover: %+v", g.Row)
	}
}

// validUntil: a claim whose write comes after its ValidUntil, by the
// engine's clock or by its own Now, writes nothing and says so (Late),
// for a key without a row and for a takeover; one within its bound wins.
func validUntil[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	now := must(ex.Now(ctx))(t)
	get := func(key string) *driver.Row {
		t.Helper()
		return must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: key}))(t).Row
	}

	// The engine's clock (Now 0): a bound long past, then one ahead.
	p := claimParams("new", "t1", 0)
	p.ValidUntil = now - 60_000
	if r := must(ex.Claim(ctx, p))(t); !r.Late || r.Won || r.Now <= p.ValidUntil {
		t.Fatalf("late claim of a new key: %+v; want Late with a clock past %d", r, p.ValidUntil)
	}
	if r := get("new"); r != nil {
		t.Fatalf("a late claim wrote %+v", r)
	}
	p.ValidUntil = now + 60_000
	if r := must(ex.Claim(ctx, p))(t); !r.Won || r.Late || r.Fence != 1 {
		t.Fatalf("claim within its bound: %+v; want it won", r)
	}

	// A takeover: a lease that ran out long ago by the engine's clock.
	must(ex.Claim(ctx, claimParams("old", "t2", now-600_000)))(t)
	q := claimParams("old", "t3", 0)
	q.ValidUntil = now - 60_000
	if r := must(ex.Claim(ctx, q))(t); !r.Late || r.Won {
		t.Fatalf("late takeover: %+v; want Late", r)
	}
	if r := get("old"); r == nil || r.LeaseToken != "t2" || r.Fence != 1 {
		t.Fatalf("after a late takeover: %+v; want the old claim's row", r)
	}
	q.ValidUntil = now + 60_000
	if r := must(ex.Claim(ctx, q))(t); !r.Won || r.Fence != 2 {
		t.Fatalf("takeover within its bound: %+v; want fence 2", r)
	}

	// The claim's own clock (Now) past its bound.
	f := claimParams("fake", "t4", t0)
	f.ValidUntil = t0 - 1
	if r := must(ex.Claim(ctx, f))(t); !r.Late || r.Won {
		t.Fatalf("claim whose Now is past its bound: %+v; want Late", r)
	}
	if r := get("fake"); r != nil {
		t.Fatalf("a late claim wrote %+v", r)
	}
}

// purgeAndStats: PurgeBatch deletes expired rows only, at most Limit; a
// live lease is never purged; Stats counts as documented.
func purgeAndStats[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	for i, key := range []string{"a", "b", "c"} {
		must(ex.Claim(ctx, claimParams(key, "tok-"+key, t0+int64(i))))(t)
		must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: key, Token: "tok-" + key, Fence: 1}, Status: 200, TTLMillis: 100, Now: t0 + int64(i)}))(t)
	}
	long := claimParams("live", "tok-l", t0)
	long.LeaseMillis, long.TTLMillis = 1_000_000, 1
	must(ex.Claim(ctx, long))(t)
	marked := claimParams("m", "tok-m", t0)
	must(ex.Claim(ctx, marked))(t)
	must(ex.MarkCommitted(ctx, driver.MarkParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: "m", Token: "tok-m", Fence: 1}, Now: t0}))(t)
	st := must(ex.Stats(ctx, t0+1001))(t)
	if want := (driver.StatsResult{InFlight: 2, Completed: 3, Expired: 3, LeaseExpired: 1, Committed: 1, Oldest: t0, Newest: t0 + 2, OldestExpired: t0 + 100}); st != want {
		t.Fatalf("Stats: %+v; want %+v", st, want)
	}
	// a, b and c expire at t0+100, +101 and +102: a driver that tracks
	// where a batch stopped says so in Last.
	r := must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: t0 + 1001, Limit: 2}))(t)
	if r.Deleted != 2 || r.Last != 0 && r.Last != t0+101 {
		t.Fatalf("first batch: %+v, want 2 deleted, Last 0 or %d", r, t0+101)
	}
	r = must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: t0 + 1001, Limit: 2, After: r.Last}))(t)
	if r.Deleted != 1 || r.Last != 0 && r.Last != t0+102 {
		t.Fatalf("second batch: %+v, want 1 deleted, Last 0 or %d", r, t0+102)
	}
	if g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "live", Now: t0}))(t); g.Row == nil {
		t.Fatal("a live lease was purged")
	}
}

// purgeKeyset: a driver that returns a Last deletes from After on only,
// After included, so that a batch that stopped in the middle of an expiry
// instant shared by several rows is finished by the next; the rows
// before After stay for the next purge. Drivers that return no Last are
// never passed an After by the ledger, and need not heed it.
func purgeKeyset[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	// Two rows expire at t0+100 and five share t0+200.
	for i, key := range []string{"a0", "a1", "b0", "b1", "b2", "b3", "b4"} {
		ttl := int64(200)
		if i < 2 {
			ttl = 100
		}
		must(ex.Claim(ctx, claimParams(key, "tok-"+key, t0)))(t)
		must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: key, Token: "tok-" + key, Fence: 1}, Status: 200, TTLMillis: ttl, Now: t0}))(t)
	}
	now := t0 + 1000
	r := must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: 1, After: t0 + 200}))(t)
	if r.Last == 0 {
		t.Skip("the driver does not track where a batch stops (Last 0)")
	}
	if r.Deleted != 1 || r.Last != t0+200 {
		t.Fatalf("batch from t0+200: %+v, want 1 deleted, Last %d", r, t0+200)
	}
	for range 2 { // two rows at a time: the batches stop inside t0+200
		if r = must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: 2, After: r.Last}))(t); r.Deleted != 2 || r.Last != t0+200 {
			t.Fatalf("batch inside t0+200: %+v, want 2 deleted, Last %d", r, t0+200)
		}
	}
	if r = must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: 2, After: r.Last}))(t); r.Deleted != 0 || r.Last != 0 {
		t.Fatalf("batch after t0+200: %+v, want none deleted, Last 0", r)
	}
	for _, key := range []string{"a0", "a1"} {
		if g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: key, Now: t0}))(t); g.Row == nil {
			t.Fatalf("%s, expired before After, was purged", key)
		}
	}
	if r = must(ex.PurgeBatch(ctx, driver.PurgeBatchParams{Now: now, Limit: 5}))(t); r.Deleted != 2 || r.Last != t0+100 {
		t.Fatalf("batch from the start: %+v, want 2 deleted, Last %d", r, t0+100)
	}
}

// clock: with Now 0 the engine's clock is used, and a read's Now is never
// before the read.
func clock[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	before := time.Now().Add(-2 * time.Second).UnixMilli() // a server clock may lag a little
	now := must(ex.Now(ctx))(t)
	after := time.Now().Add(2 * time.Second).UnixMilli()
	if now < before || now > after {
		t.Fatalf("Now = %d, want within [%d, %d]", now, before, after)
	}
	p := claimParams("k", "tok", 0)
	r := must(ex.Claim(ctx, p))(t)
	g := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "k"}))(t)
	if !r.Won || g.Row == nil || g.Now < g.Row.CreatedAt || g.Row.LeaseExpiresAt != g.Row.CreatedAt+1000 {
		t.Fatalf("engine clock: claim %+v, read %+v at %d", r, g.Row, g.Now)
	}
}

// txDone: a statement on a transaction that is over matches sql.ErrTxDone,
// whatever the database package.
func txDone[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	tx := must(d.Driver.Begin(ctx))(t)
	if err := d.Driver.Commit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	_, err := d.Driver.TxExecutor(tx).Claim(ctx, claimParams("k", "tok", t0))
	if !errors.Is(err, sql.ErrTxDone) {
		t.Fatalf("claim on a committed transaction: %v; want sql.ErrTxDone", err)
	}
	if err := d.Driver.Rollback(ctx, tx); err != nil {
		t.Fatalf("Rollback of a transaction already over: %v; want nil", err)
	}
}

// batched: a driver whose transaction Executor is a driver.Batcher gives
// the same results batched as one statement at a time.
func batched[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	tx := must(d.Driver.Begin(ctx))(t)
	defer d.Driver.Rollback(ctx, tx)
	ex := d.Driver.TxExecutor(tx)
	b, ok := ex.(driver.Batcher)
	if !ok {
		t.Skip("the driver sends statements one at a time")
	}
	c := func(key string) driver.CompleteParams {
		return driver.CompleteParams{LeaseParams: driver.LeaseParams{Scope: "s", Key: key, Token: "tok-" + key, Fence: 1}, Status: 200, TTLMillis: 10, Now: t0}
	}
	// One at a time first (RELEASE of an earlier savepoint would release
	// a later one too), then batched.
	if err := ex.Savepoint(ctx, "sp_b"); err != nil {
		t.Fatal(err)
	}
	r2 := must(ex.Claim(ctx, claimParams("b", "tok-b", t0)))(t)
	ok2 := must(ex.Complete(ctx, c("b")))(t) // the same times, reported or not, as batched
	if err := ex.ReleaseSavepoint(ctx, "sp_b"); err != nil {
		t.Fatal(err)
	}
	r1, saved, err := b.SavepointClaim(ctx, "sp_a", claimParams("a", "tok-a", t0))
	if err != nil || !saved {
		t.Fatal(saved, err)
	}
	if r1.Won != r2.Won || r1.Fence != r2.Fence || r1.LeaseExpiresAt != r2.LeaseExpiresAt {
		t.Fatalf("batched claim %+v, unbatched %+v", r1, r2)
	}
	r1c, released, err := b.CompleteRelease(ctx, c("a"), "sp_a")
	if err != nil || !r1c.OK || !released {
		t.Fatal(r1c, released, err)
	}
	ga := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "a", Now: t0}))(t)
	gb := must(ex.Get(ctx, driver.GetParams{Scope: "s", Key: "b", Now: t0}))(t)
	ga.Row.Key, ga.Row.LeaseToken = "b", gb.Row.LeaseToken
	if r1c != ok2 || !rowEqual(*ga.Row, *gb.Row) {
		t.Fatalf("batched %+v, row %+v; unbatched %+v, row %+v", r1c, ga.Row, ok2, gb.Row)
	}
	// A claim of a record that stands (a replay) loses; a driver may
	// answer it from its read without setting the savepoint, and then with
	// the row. Last: a failed ROLLBACK TO SAVEPOINT may end tx.
	r3, saved, err := b.SavepointClaim(ctx, "sp_c", claimParams("a", "tok-c", t0))
	switch {
	case err != nil || r3.Won:
		t.Fatalf("batched claim of a completed record: %+v, %v; want a loss", r3, err)
	case saved:
		if err := ex.ReleaseSavepoint(ctx, "sp_c"); err != nil {
			t.Fatal(err)
		}
	case r3.Row == nil || r3.Row.State != "completed":
		t.Fatalf("claim answered without a savepoint, row %+v; want the completed row", r3.Row)
	default:
		if err := ex.RollbackToSavepoint(ctx, "sp_c"); err == nil {
			t.Fatal("SavepointClaim reported no savepoint, yet ROLLBACK TO SAVEPOINT sp_c succeeded")
		}
	}
}

// notMigrated: without the ledger's table, statements fail marked
// driver.ErrNotMigrated.
func notMigrated[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	if _, err := d.SQL.Exec("DROP TABLE idempotency_ledger"); err != nil {
		t.Fatal(err)
	}
	_, err := d.Driver.DB().Claim(context.Background(), claimParams("k", "tok", t0))
	if !errors.Is(err, driver.ErrNotMigrated) {
		t.Fatalf("claim without the table: %v; want driver.ErrNotMigrated", err)
	}
}

// catalog: TableExists and ColumnExists see the ledger's tables and
// columns, and a table of the test's own appear and go, on the pool and
// inside a transaction.
func catalog[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	type check struct {
		table, column string // column "" asks TableExists
		want          bool
	}
	run := func(t *testing.T, checks []check) {
		t.Helper()
		tx := d.Begin(t)
		defer d.Driver.Rollback(ctx, tx)
		for _, where := range []struct {
			name string
			ex   driver.Executor
		}{{"pool", d.Driver.DB()}, {"tx", d.Driver.TxExecutor(tx)}} {
			for _, c := range checks {
				var got bool
				var err error
				if c.column == "" {
					got, err = where.ex.TableExists(ctx, c.table)
				} else {
					got, err = where.ex.ColumnExists(ctx, c.table, c.column)
				}
				if err != nil || got != c.want {
					t.Errorf("%s: exists(%q, %q) = %t, %v; want %t", where.name, c.table, c.column, got, err, c.want)
				}
			}
		}
	}
	run(t, []check{
		{"idempotency_ledger", "", true},
		{"idemledger_schema_migrations", "", true},
		{"idempotency_ledger", "fence", true},
		{"idempotency_ledger", "committed_at", true},
		{"idempotency_ledger", "no_such_column", false},
		{"catalog_probe", "", false},
		{"catalog_probe", "probe_col", false},
	})
	if _, err := d.SQL.Exec("CREATE TABLE catalog_probe (probe_col INTEGER)"); err != nil {
		t.Fatal(err)
	}
	run(t, []check{{"catalog_probe", "", true}, {"catalog_probe", "probe_col", true}, {"catalog_probe", "fence", false}})
	if _, err := d.SQL.Exec("DROP TABLE catalog_probe"); err != nil {
		t.Fatal(err)
	}
	run(t, []check{{"catalog_probe", "", false}, {"catalog_probe", "probe_col", false}})
}

// outcomeUnknown: a statement whose connection breaks after it was sent
// (PostgreSQL: the reply is lost; SQLite: an I/O error after the write)
// fails marked driver.ErrOutcomeUnknown, and the write did happen.
func outcomeUnknown[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	f := testdb.NewFaulty(t, d, 0)
	if f.Plan != nil {
		// SELECT, then the INSERT of a claim on the pool.
		f.Plan.FailAfter(2, f.IOErr)
	} else {
		// The lease token: only the claim's write carries it (a driver's
		// claim may read the row first).
		f.Proxy.Arm([]byte("cut-token"), faultnet.AfterRequest)
	}
	_, err := f.Driver.DB().Claim(context.Background(), claimParams("cut-key", "cut-token", t0))
	if !f.Fired() || !errors.Is(err, driver.ErrOutcomeUnknown) {
		t.Fatalf("claim cut after the request (fired %t): %v; want driver.ErrOutcomeUnknown", f.Fired(), err)
	}
	if g := must(d.Driver.DB().Get(context.Background(), driver.GetParams{Scope: "s", Key: "cut-key", Now: t0}))(t); g.Row == nil {
		t.Fatal("the claim's write did not happen: the cut was not after the request")
	}
}
