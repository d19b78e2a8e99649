package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

// cacheEvents records the ledger's own events as "kind/op".
type cacheEvents struct {
	mu  sync.Mutex
	got []string
}

func (r *cacheEvents) Observe(_ context.Context, e ledger.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e.Kind.String()+"/"+e.Op)
}

// take returns the events since the last take.
func (r *cacheEvents) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func (r *cacheEvents) want(t *testing.T, want ...string) {
	t.Helper()
	if got := r.take(); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// cachedLedger builds a ledger on b's database with b's clock (TTL 1 h,
// lease 1 min), the cache at cacheBytes, and a recorder of its events.
func cachedLedger[TTx any](t *testing.T, b *bundle[TTx], cacheBytes int64) (*ledger.Ledger[TTx], *cacheEvents) {
	t.Helper()
	rec := &cacheEvents{}
	l, err := ledger.New(b.d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now,
		CacheBytes: cacheBytes, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, rec
}

var cacheOutcome = ledger.Outcome{Kind: "http", Status: 201, Header: http.Header{"Location": {"/orders/1"}}, Body: []byte(`{"id":1}`)}

// complete claims r's key and stores out, as another replica would:
// through a ledger on b's database and clock with its cache off, so that a
// ledger of the test keeps the record only once it reads it.
func complete[TTx any](t *testing.T, b *bundle[TTx], r ledger.Request, out ledger.Outcome) {
	t.Helper()
	l, err := ledger.New(b.d.Driver, ledger.Options{TTL: time.Hour, Lease: time.Minute, Now: b.clock.Now, CacheBytes: ledger.CacheOff})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Claim(b.ctx, r)
	if err != nil || c.Replayed() {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	if err := l.Complete(b.ctx, c, out); err != nil {
		t.Fatal(err)
	}
}

// wantReplay claims r with l and checks that it replays out.
func wantReplay[TTx any](t *testing.T, ctx context.Context, l *ledger.Ledger[TTx], r ledger.Request, out ledger.Outcome) *ledger.Claim {
	t.Helper()
	c, err := l.Claim(ctx, r)
	if err != nil || !c.Replayed() {
		t.Fatalf("claim: %+v, %v; want a replay", c, err)
	}
	if got := c.Replay.Outcome; got.Kind != out.Kind || got.Status != out.Status || !reflect.DeepEqual(got.Header, out.Header) || string(got.Body) != string(out.Body) {
		t.Fatalf("replayed %+v, want %+v", got, out)
	}
	return c
}

// TestCacheAnswersFromMemory: once a ledger has read a completed record,
// Claim, Lookup and Mutate answer its key from memory (a replay, or
// ErrKeyReused for another fingerprint) with the record the database
// holds, reported as hits; the first read is a miss. That they do not
// read the database is shown by deleting the row by hand: the cache still
// answers, where a ledger without it claims the key afresh. Each hit's
// Record is the caller's own.
func TestCacheAnswersFromMemory(t *testing.T) {
	eachDriver(t, testCacheAnswersFromMemory[*sql.Tx], testCacheAnswersFromMemory[pgx.Tx])
}

func testCacheAnswersFromMemory[TTx any](t *testing.T, b *bundle[TTx]) {
	l, ev := cachedLedger(t, b, 0)
	k := req("k", "p")
	complete(t, b, k, cacheOutcome)
	ev.want(t) // a first claim is neither a hit nor a miss

	if c, err := l.Recall(b.ctx, k); c != nil || err != nil {
		t.Fatalf("Recall before any read: %+v, %v; want nil, nil", c, err)
	}
	ev.want(t) // Recall reads nothing: no miss
	first := wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim")
	hit := wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_hit/claim")
	if !reflect.DeepEqual(hit.Replay, first.Replay) || hit.Fence != first.Fence {
		t.Fatalf("hit %+v, want the record read %+v", hit.Replay, first.Replay)
	}
	if _, err := l.Claim(b.ctx, req("k", "other")); err != ledger.ErrKeyReused {
		t.Fatalf("other fingerprint: %v, want ErrKeyReused as it is", err)
	}
	ev.want(t, "cache_hit/claim")
	if c, err := l.Lookup(b.ctx, k); err != nil || !c.Replayed() || !reflect.DeepEqual(c.Replay, first.Replay) {
		t.Fatalf("lookup: %+v, %v", c, err)
	}
	ev.want(t, "cache_hit/lookup")
	if c, err := l.Recall(b.ctx, k); err != nil || !c.Replayed() || !reflect.DeepEqual(c.Replay, first.Replay) {
		t.Fatalf("Recall: %+v, %v", c, err)
	}
	if _, err := l.Recall(b.ctx, req("k", "other")); err != ledger.ErrKeyReused {
		t.Fatalf("Recall, other fingerprint: %v, want ErrKeyReused", err)
	}
	ev.want(t, "cache_hit/recall", "cache_hit/recall")

	// The caller's own: changing one answer changes no other.
	hit.Replay.Outcome.Body[0] = 'X'
	hit.Replay.Outcome.Header["Location"][0] = "/elsewhere"
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_hit/claim")

	// Deleted by hand (never by the ledger before expiry): the cache still
	// answers, through every entry point, where the database has nothing.
	if _, err := b.db.Exec("DELETE FROM idempotency_ledger"); err != nil {
		t.Fatal(err)
	}
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_hit/claim")
	tx := b.begin(t)
	res, err := ledger.MutateOutcome(b.ctx, l, tx, k, func(context.Context) (ledger.Outcome, error) {
		t.Fatal("fn ran on a cached key")
		return ledger.Outcome{}, nil
	})
	if err != nil || !res.Replayed || string(res.Value.Body) != string(cacheOutcome.Body) || res.Fence != first.Fence {
		t.Fatalf("MutateOutcome: %+v, %v", res, err)
	}
	b.rollback(t, tx)
	ev.want(t, "cache_hit/mutate")
	tx = b.begin(t)
	if _, err := ledger.Mutate(b.ctx, l, tx, req("k", "other"), func(context.Context) (int, error) { return 1, nil }); err != ledger.ErrKeyReused {
		t.Fatalf("Mutate, other fingerprint: %v, want ErrKeyReused", err)
	}
	b.rollback(t, tx)
	ev.want(t, "cache_hit/mutate")

	off, offEv := cachedLedger(t, b, ledger.CacheOff)
	if c, err := off.Claim(b.ctx, k); err != nil || c.Replayed() {
		t.Fatalf("without the cache: %+v, %v; want a fresh claim", c, err)
	}
	offEv.want(t)
}

// TestCacheNeverPastExpiry: the cache answers a record only until a margin
// before its expiry (1 s and a thousandth of its remaining life, judged
// from the read), after which the database answers; once the record has
// expired, a claim with another fingerprint takes it over and completes
// another outcome, which is what every later claim gets.
func TestCacheNeverPastExpiry(t *testing.T) {
	eachDriver(t, testCacheNeverPastExpiry[*sql.Tx], testCacheNeverPastExpiry[pgx.Tx])
}

func testCacheNeverPastExpiry[TTx any](t *testing.T, b *bundle[TTx]) {
	l, ev := cachedLedger(t, b, 0)
	k, other := req("k", "p"), req("k", "other")
	complete(t, b, k, cacheOutcome) // expires at t0 + 1 h
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim") // kept until t0 + 1 h - 1 s - 3.6 s

	b.clock.Advance(time.Hour - 4601*time.Millisecond)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_hit/claim")
	b.clock.Advance(time.Millisecond) // at the cache's deadline
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim") // kept again, until 1,004.6 ms before expiry
	b.clock.Advance(3595 * time.Millisecond)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_hit/claim")
	b.clock.Advance(time.Millisecond)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim") // 1,004 ms left, kept for 3 ms
	b.clock.Advance(3 * time.Millisecond)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim") // 1,001 ms left: all margin, not kept
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim")

	b.clock.Advance(1001 * time.Millisecond) // expired
	c, err := l.Claim(b.ctx, other)
	if err != nil || c.Replayed() || c.Fence != 2 {
		t.Fatalf("takeover: %+v, %v; want a claim with fence 2", c, err)
	}
	two := ledger.Outcome{Kind: "http", Status: 200, Body: []byte("two")}
	if err := l.Complete(b.ctx, c, two); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(b.ctx, k); !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("first fingerprint after the takeover: %v, want ErrKeyReused", err)
	}
	ev.want(t, "cache_hit/claim") // kept from l's own Complete
	wantReplay(t, b.ctx, l, other, two)
	ev.want(t, "cache_hit/claim")
}

// TestCacheAfterPurge: a record the cache held, expired and purged, is
// claimed afresh, not replayed.
func TestCacheAfterPurge(t *testing.T) {
	eachDriver(t, testCacheAfterPurge[*sql.Tx], testCacheAfterPurge[pgx.Tx])
}

func testCacheAfterPurge[TTx any](t *testing.T, b *bundle[TTx]) {
	l, ev := cachedLedger(t, b, 0)
	k := req("k", "p")
	complete(t, b, k, cacheOutcome)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	ev.want(t, "cache_miss/claim", "cache_hit/claim")
	b.clock.Advance(time.Hour)
	if n, err := l.Purge(b.ctx, ledger.PurgeOptions{}); n != 1 || err != nil {
		t.Fatalf("Purge: %d, %v; want 1", n, err)
	}
	if c, err := l.Claim(b.ctx, k); err != nil || c.Replayed() || c.Fence != 1 {
		t.Fatalf("after the purge: %+v, %v; want a fresh claim", c, err)
	}
	var inFlight *ledger.InFlightError
	if c, err := l.Lookup(b.ctx, k); c != nil || !errors.As(err, &inFlight) {
		t.Fatalf("lookup after the purge: %+v, %v; want in flight under the new claim", c, err)
	}
	ev.want(t)
}

// TestCacheTwoLedgers: two ledgers on one database, as two replicas. What
// one completes, the other reads from the database (a miss) and keeps;
// after the record expires and one of them completes another outcome under
// the key, the other answers the new record, never the one it kept.
func TestCacheTwoLedgers(t *testing.T) {
	eachDriver(t, testCacheTwoLedgers[*sql.Tx], testCacheTwoLedgers[pgx.Tx])
}

func testCacheTwoLedgers[TTx any](t *testing.T, b *bundle[TTx]) {
	a, aEv := cachedLedger(t, b, 0)
	c, cEv := cachedLedger(t, b, 0)
	k, other := req("k", "p"), req("k", "other")
	complete(t, b, k, cacheOutcome)
	wantReplay(t, b.ctx, c, k, cacheOutcome)
	wantReplay(t, b.ctx, c, k, cacheOutcome)
	cEv.want(t, "cache_miss/claim", "cache_hit/claim")
	wantReplay(t, b.ctx, a, k, cacheOutcome) // Complete keeps nothing: a reads it once
	aEv.want(t, "cache_miss/claim")

	b.clock.Advance(time.Hour)
	two := ledger.Outcome{Kind: "http", Status: 200, Body: []byte("two")}
	complete(t, b, other, two)
	if _, err := c.Claim(b.ctx, k); !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("the other replica, first fingerprint: %v, want ErrKeyReused", err)
	}
	wantReplay(t, b.ctx, c, other, two)
	cEv.want(t, "cache_miss/claim", "cache_hit/claim")
}

// TestCacheMutateKeepsOnlyCommitted: a record completed in the caller's
// transaction and replayed there by a second Mutate is not kept (the
// transaction may roll back, and then the key has no record); a record
// written by MutateOutcomeCommit, whose transaction is its own, is kept
// once that commits, and its replay from memory still commits the
// transaction.
func TestCacheMutateKeepsOnlyCommitted(t *testing.T) {
	eachDriver(t, testCacheMutateKeepsOnlyCommitted[*sql.Tx], testCacheMutateKeepsOnlyCommitted[pgx.Tx])
}

func testCacheMutateKeepsOnlyCommitted[TTx any](t *testing.T, b *bundle[TTx]) {
	l, ev := cachedLedger(t, b, 0)
	k := req("k", "p")
	ran := 0
	fn := func(context.Context) (ledger.Outcome, error) { ran++; return cacheOutcome, nil }
	tx := b.begin(t)
	for i := range 2 {
		res, err := ledger.MutateOutcome(b.ctx, l, tx, k, fn)
		if err != nil || res.Replayed != (i == 1) {
			t.Fatalf("MutateOutcome %d in one transaction: %+v, %v", i, res, err)
		}
	}
	b.rollback(t, tx)
	ev.want(t, "cache_miss/mutate")
	c, err := l.Claim(b.ctx, k)
	if err != nil || c.Replayed() {
		t.Fatalf("after the rollback: %+v, %v; want a fresh claim", c, err)
	}
	ev.want(t)
	if err := l.Release(b.ctx, c); err != nil {
		t.Fatal(err)
	}

	for i, want := range []struct {
		replayed bool
		events   []string
	}{{false, nil}, {true, []string{"cache_hit/mutate"}}, {true, []string{"cache_hit/mutate"}}} { // kept once its own commit succeeded
		tx := b.begin(t)
		res, err := ledger.MutateOutcomeCommit(b.ctx, l, tx, k, fn)
		if err != nil || res.Replayed != want.replayed {
			t.Fatalf("MutateOutcomeCommit %d: %+v, %v", i, res, err)
		}
		if err := b.d.Driver.Commit(b.ctx, tx); err == nil {
			t.Fatalf("MutateOutcomeCommit %d left its transaction open: a second commit succeeded", i)
		}
		ev.want(t, want.events...)
	}
	if ran != 2 {
		t.Fatalf("fn ran %d times, want 2 (the rolled back run, and one)", ran)
	}
}

// TestCacheOff: with CacheOff every answer comes from the database and no
// event is reported.
func TestCacheOff(t *testing.T) {
	eachDriver(t, testCacheOff[*sql.Tx], testCacheOff[pgx.Tx])
}

func testCacheOff[TTx any](t *testing.T, b *bundle[TTx]) {
	for _, cacheBytes := range []int64{ledger.CacheOff, -5} {
		t.Run(fmt.Sprint(cacheBytes), func(t *testing.T) {
			l, ev := cachedLedger(t, b, cacheBytes)
			k := req(fmt.Sprint("off", cacheBytes), "p")
			complete(t, b, k, cacheOutcome)
			wantReplay(t, b.ctx, l, k, cacheOutcome)
			wantReplay(t, b.ctx, l, k, cacheOutcome)
			if _, err := b.db.Exec("DELETE FROM idempotency_ledger"); err != nil {
				t.Fatal(err)
			}
			if c, err := l.Recall(b.ctx, k); c != nil || err != nil {
				t.Fatalf("Recall: %+v, %v; want nil, nil", c, err)
			}
			if c, err := l.Claim(b.ctx, k); err != nil || c.Replayed() {
				t.Fatalf("after the delete: %+v, %v; want a fresh claim", c, err)
			}
			ev.want(t)
		})
	}
}

// TestCacheCenturiesTTL: the longest TTL (a time.Duration's 292 years)
// keeps records too; the monotonic deadline saturates rather than wraps
// once the process has run long enough for it to pass the clock's range.
func TestCacheCenturiesTTL(t *testing.T) {
	eachDriver(t, testCacheCenturiesTTL[*sql.Tx], testCacheCenturiesTTL[pgx.Tx])
}

func testCacheCenturiesTTL[TTx any](t *testing.T, b *bundle[TTx]) {
	rec := &cacheEvents{}
	l, err := ledger.New(b.d.Driver, ledger.Options{TTL: math.MaxInt64, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	k := req("k", "p")
	c, err := l.Claim(b.ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(b.ctx, c, cacheOutcome); err != nil {
		t.Fatal(err)
	}
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	wantReplay(t, b.ctx, l, k, cacheOutcome)
	rec.want(t, "cache_hit/claim", "cache_hit/claim") // kept from its own Complete
}

// TestCacheKeepsWhatItCompletes: a record this ledger completes on the pool
// is kept from Complete's own statement, with the times the engine stored:
// the replay right after it answers from memory (shown by deleting the row
// by hand first) with exactly the record the database held, until the
// cache's margin before the record's expiry (by the fake clock), and never
// after. A record whose commit mark the driver does not report is kept only
// once read: a hit must still be exactly the stored record.
func TestCacheKeepsWhatItCompletes(t *testing.T) {
	eachDriver(t, testCacheKeepsWhatItCompletes[*sql.Tx], testCacheKeepsWhatItCompletes[pgx.Tx])
}

func testCacheKeepsWhatItCompletes[TTx any](t *testing.T, b *bundle[TTx]) {
	l, ev := cachedLedger(t, b, 0)
	run := func(key string, mark bool) (stored *ledger.Record) {
		t.Helper()
		c, err := l.Claim(b.ctx, req(key, "p"))
		if err != nil || c.Replayed() {
			t.Fatalf("claim: %+v, %v", c, err)
		}
		b.clock.Advance(7 * time.Millisecond)
		if mark {
			if err := l.Commit(b.ctx, c); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(5 * time.Millisecond)
		}
		if err := l.Complete(b.ctx, c, cacheOutcome); err != nil {
			t.Fatal(err)
		}
		r, err := l.Get(b.ctx, "tenant-1", key)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	del := func(key string) {
		t.Helper()
		q := testdb.Rebind(b.d.Engine, `DELETE FROM idempotency_ledger WHERE scope = ? AND "key" = ?`)
		if _, err := b.db.Exec(q, "tenant-1", key); err != nil {
			t.Fatal(err)
		}
	}

	stored := run("plain", false)
	ev.want(t)
	del("plain")
	hit := wantReplay(t, b.ctx, l, req("plain", "p"), cacheOutcome)
	ev.want(t, "cache_hit/claim")
	if !reflect.DeepEqual(hit.Replay, stored) {
		t.Fatalf("hit %+v, want the record as stored %+v", hit.Replay, stored)
	}
	if _, err := l.Claim(b.ctx, req("plain", "other")); err != ledger.ErrKeyReused {
		t.Fatalf("other fingerprint: %v, want ErrKeyReused from memory", err)
	}
	ev.want(t, "cache_hit/claim")

	stored = run("marked", true)
	ev.want(t)
	if c, err := l.Recall(b.ctx, req("marked", "p")); err != nil || (c != nil && !reflect.DeepEqual(c.Replay, stored)) {
		t.Fatalf("Recall of a marked record: %+v, %v; want nothing, or the record as stored %+v", c, err, stored)
	}
	ev.take() // a hit when the driver reported the mark

	// Expiry: kept until 1 s and 3.6 s (a thousandth of the TTL) before
	// it, counted from the call's start (the clock does not move during
	// Complete here); then a miss, from the database.
	run("expiring", false) // expires 1 h after the clock reads now
	b.clock.Advance(time.Hour - 4601*time.Millisecond)
	wantReplay(t, b.ctx, l, req("expiring", "p"), cacheOutcome)
	ev.want(t, "cache_hit/claim")
	b.clock.Advance(time.Millisecond)
	wantReplay(t, b.ctx, l, req("expiring", "p"), cacheOutcome)
	ev.want(t, "cache_miss/claim")
	b.clock.Advance(4600 * time.Millisecond) // expired
	if c, err := l.Claim(b.ctx, req("expiring", "p")); err != nil || c.Replayed() {
		t.Fatalf("after expiry: %+v, %v; want a fresh claim", c, err)
	}
	ev.want(t)
}
