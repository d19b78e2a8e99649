package ledger

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// cacheHeaders are the stored header lines of cacheRow's records: as
// Complete encodes them.
var cacheHeaders, _ = headerJSON(Outcome{Header: http.Header{"Content-Type": {"application/json"}}})

func cacheRow(key string, body int) *driver.Row {
	return &driver.Row{Scope: "tenant-1", Key: key, Fingerprint: make([]byte, 32), State: "completed",
		Fence: 1, Status: 201, Headers: cacheHeaders, Body: make([]byte, body),
		Kind: "http", CreatedAt: 1, CompletedAt: 2, ExpiresAt: 3}
}

// TestCacheEvictsLeastRecentlyUsed: a shard over its bytes drops the entry
// used least recently, a get counts as a use, an entry over a quarter of
// a shard is not kept, and an entry past either deadline is dropped.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newOutcomeCache(cacheShardBytes) // one shard
	if len(c.shards) != 1 || c.limit != cacheShardBytes || c.maxEntry != cacheShardBytes/4 {
		t.Fatalf("%d shards of %d bytes, largest entry %d", len(c.shards), c.limit, c.maxEntry)
	}
	// Each entry is a quarter of the shard, less a little: four fit.
	// The header as the cache charges it: its struct and the allocator's
	// rounding (48 and 32 bytes), one field (40) of one value (16), and
	// their bytes.
	header := 48 + 32 + 40 + 16 + len("Content-Type") + len("application/json")
	body := int(c.maxEntry) - cacheEntryOverhead - len("tenant-1") - 1 - 32 - header - len("http")
	k := func(s string) cacheKey { return cacheKey{"tenant-1", s} }
	for _, s := range []string{"a", "b", "c", "d"} {
		c.put(k(s), cacheRow(s, body), nil, 10, 10)
	}
	if n, bytes := c.stats(); n != 4 || bytes != 4*c.maxEntry {
		t.Fatalf("%d entries of %d bytes, want 4 of %d", n, bytes, 4*c.maxEntry)
	}
	if c.get(k("a"), 0, 0) == nil {
		t.Fatal("a was not kept")
	}
	c.put(k("e"), cacheRow("e", body), nil, 10, 10) // drops b, the least recently used
	for s, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true, "e": true} {
		if got := c.get(k(s), 0, 0) != nil; got != want {
			t.Errorf("%s kept %t, want %t", s, got, want)
		}
	}
	c.put(k("big"), cacheRow("big", body+1), nil, 10, 10)
	if c.get(k("big"), 0, 0) != nil {
		t.Error("an entry over a quarter of the shard was kept")
	}
	for _, tt := range []struct {
		key        string
		mono, wall int64
	}{{"c", 10, 9}, {"d", 9, 10}} {
		if c.get(k(tt.key), tt.mono, tt.wall) != nil {
			t.Errorf("%s answered at clocks %d, %d, with deadlines 10, 10", tt.key, tt.mono, tt.wall)
		}
	}
	if n, _ := c.stats(); n != 2 {
		t.Errorf("%d entries left, want 2 (a and e)", n)
	}
}

// TestCacheHeapBound: a million distinct records through a cache of the
// default size hold no more heap than the bound says, the cache's own
// accounting included (cacheEntryOverhead is checked here). Set
// IDEMLEDGER_CACHE_KEYS for another count; skipped with -short and under
// the race detector (CI runs it in its suite without -race).
func TestCacheHeapBound(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a million records: run without -short and without -race")
	}
	n := 1_000_000
	if s := os.Getenv("IDEMLEDGER_CACHE_KEYS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	// Small records are where the overhead weighs most (4,000-byte bodies
	// were measured too: BENCHMARKS.md, "Replays from memory, against the peers").
	for _, body := range []int{0, 200} {
		t.Run(fmt.Sprintf("body=%d", body), func(t *testing.T) {
			heap := func() uint64 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				return m.HeapAlloc
			}
			before := heap()
			c := newOutcomeCache(DefaultCacheBytes)
			for i := range n {
				key := "key-" + strconv.Itoa(i)
				c.put(cacheKey{"tenant-1", key}, cacheRow(key, body), nil, 1<<62, 1<<62)
			}
			grew := int64(heap()) - int64(before)
			entries, bytes := c.stats()
			t.Logf("%d records of %d body bytes: %d kept, accounted %d bytes, heap grew %d bytes (%d per entry)",
				n, body, entries, bytes, grew, grew/int64(max(entries, 1)))
			if bytes > DefaultCacheBytes {
				t.Errorf("accounted %d bytes, over the bound %d", bytes, DefaultCacheBytes)
			}
			// The shards' maps keep the buckets of their largest size:
			// allow a tenth over the bound for them.
			if limit := int64(DefaultCacheBytes) * 11 / 10; grew > limit {
				t.Errorf("heap grew %d bytes, over %d", grew, limit)
			}
			runtime.KeepAlive(c)
		})
	}
}

// TestCacheDeadlineSaturates: a remaining life past what the monotonic
// clock counts ahead of a long-running process keeps the entry (its
// monotonic deadline saturates) instead of wrapping to a deadline in the
// past.
func TestCacheDeadlineSaturates(t *testing.T) {
	l := &Ledger[any]{cache: newOutcomeCache(DefaultCacheBytes)}
	r := Request{Scope: "tenant-1", Key: "k"}
	row := cacheRow("k", 10)
	row.ExpiresAt = math.MaxInt64 / int64(time.Millisecond)
	mono := int64(math.MaxInt64 / 2) // a process up for 146 years
	l.remember(r, &stood{row: row, now: 1}, mono, 0)
	if l.cache.get(cacheKey{"tenant-1", "k"}, mono+1, 1) == nil {
		t.Fatal("the entry is not answered just after it was kept")
	}
}

// BenchmarkCache is what the cache adds to a request: a miss (what every
// first request pays before going to the database, with the clocks read),
// a hit (the record decoded for the caller), and keeping a record read
// from the database, on a cache of the default size holding 10,000
// records.
//
//	go test -run '^$' -bench '^BenchmarkCache$' ./ledger/
func BenchmarkCache(b *testing.B) {
	l := &Ledger[any]{cache: newOutcomeCache(DefaultCacheBytes)}
	fp := [32]byte{}
	long := func(key string) *driver.Row { r := cacheRow(key, 200); r.ExpiresAt = 1 << 40; return r }
	for i := range 10_000 {
		key := "key-" + strconv.Itoa(i)
		mono, wall := l.cacheClock(time.Now())
		l.remember(Request{Scope: "tenant-1", Key: key}, &stood{row: long(key), now: 1}, mono, wall)
	}
	if n, _ := l.cache.stats(); n != 10_000 {
		b.Fatalf("%d records kept, want 10000", n)
	}
	hit := Request{Scope: "tenant-1", Key: "key-7", Fingerprint: fp}
	miss := Request{Scope: "tenant-1", Key: "absent", Fingerprint: fp}
	b.Run("miss", func(b *testing.B) {
		for b.Loop() {
			mono, wall := l.cacheClock(time.Now())
			if _, ok, _ := l.recall(miss, mono, wall); ok {
				b.Fatal("hit")
			}
		}
	})
	b.Run("hit", func(b *testing.B) {
		for b.Loop() {
			mono, wall := l.cacheClock(time.Now())
			if c, ok, _ := l.recall(hit, mono, wall); !ok || c.Replay == nil {
				b.Fatal("miss")
			}
		}
	})
	b.Run("keep", func(b *testing.B) {
		row := long("kept")
		for i := 0; b.Loop(); i++ {
			mono, wall := l.cacheClock(time.Now())
			l.remember(Request{Scope: "tenant-1", Key: "kept-" + strconv.Itoa(i%50_000)}, &stood{row: row, now: 1}, mono, wall)
		}
	})
}

// TestCacheConcurrent: goroutines keeping and reading records of their own
// keys through a small cache that evicts all the time get each key's own
// row or none, never another's (run with -race).
func TestCacheConcurrent(t *testing.T) {
	c := newOutcomeCache(4 * cacheShardBytes) // four shards
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 3000 {
				key := fmt.Sprintf("g%d-%d", g, i%700)
				k := cacheKey{"tenant-1", key}
				if e := c.get(k, 0, 0); e != nil && (e.row.Key != key || len(e.row.Body) != 100+i%700) {
					t.Errorf("%s: got the row of %s with a body of %d bytes", key, e.row.Key, len(e.row.Body))
					return
				}
				c.put(k, cacheRow(key, 100+i%700), nil, 10, 10)
			}
		})
	}
	wg.Wait()
	if _, bytes := c.stats(); bytes > 4*cacheShardBytes {
		t.Errorf("%d bytes kept, over the bound", bytes)
	}
}

// TestCacheNeedsTheEngineTime: a row whose read carried no engine time is
// not kept, since its remaining life cannot be counted.
func TestCacheNeedsTheEngineTime(t *testing.T) {
	l := &Ledger[any]{cache: newOutcomeCache(DefaultCacheBytes)}
	row := cacheRow("k", 10)
	row.ExpiresAt = 1 << 40
	l.remember(Request{Scope: "tenant-1", Key: "k"}, &stood{row: row, now: 0}, 0, 0)
	if n, _ := l.cache.stats(); n != 0 {
		t.Fatalf("%d records kept, want none", n)
	}
}

// TestCachedHeader: the header a hit answers with is the one stored, a
// null list and an empty one kept apart, and it is the caller's own: what
// one caller changes in it, the next hit does not see.
func TestCachedHeader(t *testing.T) {
	tests := []struct {
		name string
		h    map[string][]string
	}{
		{"null", nil},
		{"empty", map[string][]string{}},
		{"one", map[string][]string{"Content-Type": {"application/json"}}},
		{"several", map[string][]string{"Location": {"/orders/1"}, "Set-Cookie": {"a=1", "b=2", ""}, "X-Empty": {}, "X-Null": nil}},
		{"bytes", map[string][]string{"X-Latin-1": {"caf\xe9", "ok"}, "": {"no name"}}},
	}
	for _, tt := range tests {
		col, err := headerJSON(Outcome{Header: tt.h})
		if err != nil {
			t.Fatal(err)
		}
		c := newOutcomeCache(DefaultCacheBytes)
		k := cacheKey{"tenant-1", tt.name}
		row := cacheRow(tt.name, 10)
		row.Headers = col
		c.put(k, row, nil, 10, 10)
		e := c.get(k, 0, 0)
		if e == nil {
			t.Fatalf("%s: not kept", tt.name)
		}
		if e.row.Headers != nil {
			t.Errorf("%s: the entry keeps the column's %d bytes besides the decoded header", tt.name, len(e.row.Headers))
		}
		got := e.header.clone()
		if !reflect.DeepEqual(got, tt.h) {
			t.Errorf("%s: got %#v, want %#v", tt.name, got, tt.h)
		}
		for name, values := range got {
			if len(values) > 0 {
				values[0] = "changed"
			}
			got[name] = append(values, "appended")
		}
		if got != nil {
			got["X-New"] = []string{"new"}
		}
		if again := e.header.clone(); !reflect.DeepEqual(again, tt.h) {
			t.Errorf("%s: after a caller changed its copy, got %#v, want %#v", tt.name, again, tt.h)
		}
		// A record this process completed is kept from the caller's map,
		// with no column: it answers the same.
		mine := cacheKey{"tenant-1", tt.name + "-completed here"}
		row = cacheRow(mine.key, 10)
		row.Headers = nil
		c.put(mine, row, newCachedHeader(tt.h), 10, 10)
		if got := c.get(mine, 0, 0).header.clone(); !reflect.DeepEqual(got, tt.h) {
			t.Errorf("%s, kept from the map: got %#v, want %#v", tt.name, got, tt.h)
		}
	}
}
