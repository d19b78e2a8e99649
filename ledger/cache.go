package ledger

import (
	"bytes"
	"context"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// DefaultCacheBytes is the memory the cache of completed outcomes may hold
// when [Options.CacheBytes] is 0: 16 MiB (see BENCHMARKS.md, "Replays
// from memory, against the peers", for what it holds and why it is on).
const DefaultCacheBytes = 16 << 20

// CacheOff, as [Options.CacheBytes], turns the cache of completed outcomes
// off: every Claim, Lookup and Mutate reads the database, and Recall
// answers nothing.
const CacheOff = -1

// The cache's margin before a record's expiry: it stops answering a record
// cacheMarginMillis plus 1/cacheMarginDivisor of the record's remaining life
// (as the engine's clock measured it at the read) before the process's
// clocks say that life is over. The fixed part covers a step of either
// clock; the proportional part a rate difference between them (NTP slews
// a clock by at most 500 ppm, half of this).
const (
	cacheMarginMillis  = 1000
	cacheMarginDivisor = 1000
)

// cacheEntryOverhead is what one entry costs beyond the bytes of its row
// (the map's slot, the entry, the row's struct and its slices' headers,
// the allocator's rounding), measured by TestCacheHeapBound.
const cacheEntryOverhead = 512

// cacheShardBytes is the least memory a shard is given: a small cache has
// fewer shards, so that a shard can still hold a sizable record.
const cacheShardBytes = 1 << 20

// maxCacheShards bounds the shards, each a mutex and its map, so that
// concurrent requests rarely wait for each other.
const maxCacheShards = 16

// outcomeCache holds completed records by scope and key, each until a
// deadline before its expiry, least recently used first out once its
// shard's bytes are over the limit. A completed record never changes until
// it expires (see standing), so a record in the cache answers exactly as
// the database would, for any fingerprint, until then. Only rows read
// committed and completed are put in it, and each is the cache's own copy:
// a hit decodes a fresh Record from it.
//
// It is the module's own rather than a library's because none of the
// caches that would fit keeps the main module lean and the bound exact:
// hashicorp/golang-lru bounds entries, not bytes; ristretto admits by
// sampling (a kept record may be dropped at once) and brings dependencies;
// otter has a weigher and no dependencies, but is some 13,000 lines whose
// weight leaves out its own per-entry cost and whose eviction runs behind
// the writes, so the bound holds only between its maintenance runs. What
// the ledger needs is a map, a recency list and a byte count per shard.
type outcomeCache struct {
	seed     maphash.Seed
	epoch    time.Time // the origin of the monotonic deadlines
	shards   []cacheShard
	limit    int64 // bytes per shard
	maxEntry int64 // the largest entry kept, in bytes
}

type cacheShard struct {
	mu    sync.Mutex
	m     map[cacheKey]*cacheEntry
	root  cacheEntry // sentinel of the recency ring: root.next is the newest
	bytes int64
	_     [64]byte // keeps shards' mutexes on separate cache lines
}

type cacheKey struct{ scope, key string }

// cacheEntry is one record. row and header are never changed once the
// entry is made, so they may be read outside the shard's lock. row holds
// no headers column: header is that column decoded, once, when the entry
// was made.
type cacheEntry struct {
	k      cacheKey
	row    driver.Row
	header *cachedHeader
	size   int64
	// mono (nanoseconds since the cache's epoch, by the monotonic clock)
	// and wall (Unix milliseconds) are the deadlines: the entry answers
	// only while both clocks are before them. With Options.Now set, mono is
	// unused (the clock reads 0) and wall is in the ledger's own time.
	mono, wall int64
	prev, next *cacheEntry
}

func newOutcomeCache(bytes int64) *outcomeCache {
	n := min(max(bytes/cacheShardBytes, 1), maxCacheShards)
	c := &outcomeCache{
		seed:   maphash.MakeSeed(),
		epoch:  time.Now(),
		shards: make([]cacheShard, n),
		limit:  bytes / n,
	}
	c.maxEntry = c.limit / 4
	for i := range c.shards {
		s := &c.shards[i]
		s.m = make(map[cacheKey]*cacheEntry)
		s.root.next, s.root.prev = &s.root, &s.root
	}
	return c
}

func (c *outcomeCache) shard(k cacheKey) *cacheShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	return &c.shards[maphash.Comparable(c.seed, k)%uint64(len(c.shards))]
}

// get returns the entry kept for k if its deadlines are after mono and
// wall, and marks it recently used; an entry past a deadline is dropped.
func (c *outcomeCache) get(k cacheKey, mono, wall int64) *cacheEntry {
	s := c.shard(k)
	s.mu.Lock()
	e := s.m[k]
	if e == nil {
		s.mu.Unlock()
		return nil
	}
	if mono >= e.mono || wall >= e.wall {
		s.remove(e)
		s.mu.Unlock()
		return nil
	}
	if s.root.next != e {
		s.unlink(e)
		s.pushFront(e)
	}
	s.mu.Unlock()
	return e
}

// put keeps a copy of row, a completed record, under k until the
// deadlines mono and wall, with its headers: header when it is not nil,
// else row's headers column decoded. A record larger than a quarter of a
// shard is not kept, nor one whose headers column does not decode (the
// database's path answers it).
func (c *outcomeCache) put(k cacheKey, row *driver.Row, header *cachedHeader, mono, wall int64) {
	if header == nil && row.Headers != nil {
		h, err := decodeHeader(row.Headers)
		if err != nil {
			return
		}
		header = newCachedHeader(h)
	}
	data := int64(len(k.scope)+len(k.key)+len(row.Fingerprint)+len(row.Body)+len(row.Kind)) + header.size()
	size := data + cacheEntryOverhead
	if size > c.maxEntry {
		return
	}
	// Few allocations per entry, as the overhead counts them: the entry
	// with its row, one string for the scope and the key (the map's key
	// and the row share it), one buffer for the row's bytes. The
	// request's scope and key name the same bytes as the row's (keys
	// compare as bytes).
	sk := k.scope + k.key
	k = cacheKey{scope: sk[:len(k.scope)], key: sk[len(k.scope):]}
	buf := make([]byte, 0, len(row.Fingerprint)+len(row.Body))
	part := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	e := &cacheEntry{k: k, header: header, size: size, mono: mono, wall: wall, row: driver.Row{
		Scope: k.scope, Key: k.key, State: "completed",
		Fingerprint: part(row.Fingerprint), Body: part(row.Body),
		Fence: row.Fence, Status: row.Status, Kind: strings.Clone(row.Kind),
		CreatedAt: row.CreatedAt, CompletedAt: row.CompletedAt, ExpiresAt: row.ExpiresAt, CommittedAt: row.CommittedAt,
	}}
	s := c.shard(k)
	s.mu.Lock()
	if old := s.m[k]; old != nil {
		s.remove(old)
	}
	s.m[k] = e
	s.pushFront(e)
	s.bytes += size
	for s.bytes > c.limit {
		s.remove(s.root.prev)
	}
	s.mu.Unlock()
}

// stats returns the entries and their bytes, for tests.
func (c *outcomeCache) stats() (entries int, bytes int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		entries += len(s.m)
		bytes += s.bytes
		s.mu.Unlock()
	}
	return entries, bytes
}

func (s *cacheShard) pushFront(e *cacheEntry) {
	e.prev, e.next = &s.root, s.root.next
	s.root.next.prev = e
	s.root.next = e
}

func (s *cacheShard) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (s *cacheShard) remove(e *cacheEntry) {
	s.unlink(e)
	delete(s.m, e.k)
	s.bytes -= e.size
}

// cacheClock reads the clocks the cache's deadlines are kept in at t: the
// monotonic nanoseconds since the cache's epoch and the wall clock's Unix
// milliseconds, or 0 and Options.Now's milliseconds when that is set (the
// ledger's time is then the test's, whatever the process's clocks say).
func (l *Ledger[TTx]) cacheClock(t time.Time) (mono, wall int64) {
	if l.now != nil {
		return 0, l.now().UnixMilli()
	}
	return int64(t.Sub(l.cache.epoch)), t.UnixMilli()
}

// stood is the completed row that answered a claim or a lookup from the
// database (a replay, or ErrKeyReused), with the engine's time at or after
// its read: what the cache keeps.
type stood struct {
	row *driver.Row
	// header is row's headers decoded already, or nil: a record this
	// process completed has the caller's map, and its row no column.
	header *cachedHeader
	now    int64
}

// note records in st, when st is not nil, the row that answered if it is
// completed: standing answered from it, so it was unexpired at now.
func (st *stood) note(row *driver.Row, now int64) {
	if st != nil && row.State == "completed" {
		st.row, st.now = row, now
	}
}

// recall answers req from the cache when it holds req's key unexpired at
// the clocks mono and wall, as standing would from the database: a replay
// Claim, or ErrKeyReused for another fingerprint. ok is false when the
// cache does not hold the key.
func (l *Ledger[TTx]) recall(req Request, mono, wall int64) (c *Claim, ok bool, err error) {
	e := l.cache.get(cacheKey{req.Scope, req.Key}, mono, wall)
	if e == nil {
		return nil, false, nil
	}
	if string(e.row.Fingerprint) != string(req.Fingerprint[:]) {
		return nil, true, ErrKeyReused
	}
	r, err := record(&e.row)
	if err != nil {
		// The row was decoded once already, when it was read; a row
		// that no longer decodes is left to the database's path.
		return nil, false, nil
	}
	// The Record is the caller's own: its header and body must not be
	// the cache's.
	r.Outcome.Header = e.header.clone()
	r.Outcome.Body = bytes.Clone(r.Outcome.Body)
	return &Claim{Request: req, Fence: r.Fence, Replay: r}, true, nil
}

// remember keeps st's row, read at the engine's time st.now by a call that
// began at the clocks mono and wall, until a margin before its expiry:
// its remaining life at the read, counted from the call's start (before
// the read, so never later than the engine's), less the margin. A row
// whose remaining life is within the margin is not kept.
func (l *Ledger[TTx]) remember(req Request, st *stood, mono, wall int64) {
	if st.now <= 0 {
		return // no engine time to count the remaining life from
	}
	rest := st.row.ExpiresAt - st.now
	life := rest - cacheMarginMillis - rest/cacheMarginDivisor
	if life <= 0 {
		return
	}
	monoUntil := int64(math.MaxInt64) // a TTL of centuries: the wall clock's deadline decides
	if life < (math.MaxInt64-mono)/int64(time.Millisecond) {
		monoUntil = mono + life*int64(time.Millisecond)
	}
	l.cache.put(cacheKey{req.Scope, req.Key}, st.row, st.header, monoUntil, wall+life)
}

// keepCompleted keeps in the cache the record that c's holder completed
// with p (whose headers column is header, as the caller gave it: the
// cache takes the map, not the JSON made of it), as the driver's res
// reports it stored, by a call that began at
// start: its remaining life at the write is exactly the TTL, counted from
// the call's start as remember counts it. Only committed writes come here
// (Complete on the pool, or MutateOutcomeCommit's once its COMMIT
// succeeded): a record completed by this process cannot change until it
// expires. A write whose times or commit mark the engine did not report is
// not kept (the record is kept once read).
func (l *Ledger[TTx]) keepCompleted(c *Claim, p driver.CompleteParams, header map[string][]string, res driver.CompleteResult, start time.Time) {
	if l.cache == nil || !res.OK || res.CompletedAt <= 0 {
		return
	}
	if !res.Marked {
		// Whether the record carries a commit mark is unknown (MySQL's
		// statement reports the completion time alone), and a Claim does
		// not say whether Commit was called on it: the first replay
		// reads the record instead.
		return
	}
	mark := res.CommittedAt
	row := &driver.Row{
		Scope: c.Request.Scope, Key: c.Request.Key, Fingerprint: c.Request.Fingerprint[:], State: "completed",
		Fence: c.Fence, Status: p.Status, Body: p.Body, Kind: p.Kind,
		CreatedAt: c.claimedAt, CompletedAt: res.CompletedAt, ExpiresAt: res.CompletedAt + p.TTLMillis, CommittedAt: mark,
	}
	mono, wall := l.cacheClock(start)
	l.remember(c.Request, &stood{row: row, header: newCachedHeader(header), now: res.CompletedAt}, mono, wall)
}

// throughCache is the cache around ask, a claim or a lookup of req on the
// pool (which commits at once: what it reads is committed), reported as
// op. A hit answers without ask; otherwise the completed row that ask
// answered from, if any, is reported as a miss and kept.
func (l *Ledger[TTx]) throughCache(ctx context.Context, req Request, op string, ask func(st *stood) (*Claim, error)) (*Claim, error) {
	if l.cache == nil {
		return ask(nil)
	}
	start := time.Now()
	mono, wall := l.cacheClock(start)
	if c, ok, err := l.recall(req, mono, wall); ok {
		l.observe(ctx, EventCacheHit, op, start)
		return c, err
	}
	var st stood
	c, err := ask(&st)
	if st.row != nil {
		l.observe(ctx, EventCacheMiss, op, start)
		l.remember(req, &st, mono, wall)
	}
	return c, err
}

// observe reports an event of the ledger's own to Options.Observer.
func (l *Ledger[TTx]) observe(ctx context.Context, kind EventKind, op string, start time.Time) {
	if l.obs == nil {
		return
	}
	l.obs.Observe(ctx, Event{Kind: kind, Op: op, Duration: time.Since(start)})
}

// cachedHeader is a decoded headers column as the cache keeps it: each
// name with its values, in three allocations (the fields, the values, and
// one string that holds every name's and value's bytes). A hit makes a
// fresh map of it (clone), where decoding the column's JSON again cost
// several allocations a name. nil stands for a NULL (or JSON null) column.
type cachedHeader struct {
	fields []cachedField
	values []string
}

type cachedField struct {
	name string
	// values is a part of cachedHeader.values, or nil for a name whose
	// list is null.
	values []string
}

// newCachedHeader returns h as the cache keeps it, or nil for a nil h.
func newCachedHeader(h map[string][]string) *cachedHeader {
	if h == nil {
		return nil
	}
	n, nv := 0, 0
	fields := make([]cachedField, 0, len(h))
	for name, values := range h {
		n += len(name)
		nv += len(values)
		for _, v := range values {
			n += len(v)
		}
		fields = append(fields, cachedField{name: name, values: values})
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(f.name)
		for _, v := range f.values {
			b.WriteString(v)
		}
	}
	all := b.String()
	ch := &cachedHeader{fields: fields, values: make([]string, 0, nv)}
	off := 0
	next := func(l int) string {
		s := all[off : off+l]
		off += l
		return s
	}
	for i, f := range fields {
		fields[i].name = next(len(f.name))
		if f.values == nil {
			continue
		}
		start := len(ch.values)
		for _, v := range f.values {
			ch.values = append(ch.values, next(len(v)))
		}
		fields[i].values = ch.values[start:len(ch.values):len(ch.values)]
	}
	return ch
}

// size is what h holds, in bytes: its struct, its fields and values, and
// their bytes.
func (h *cachedHeader) size() int64 {
	if h == nil {
		return 0
	}
	const (
		structBytes = 48 // two slice headers
		fieldBytes  = 40 // a string header and a slice header
		valueBytes  = 16 // a string header
		// The allocator's rounding of the four allocations, measured
		// by TestCacheHeapBound.
		roundingBytes = 32
	)
	n := int64(structBytes + roundingBytes + fieldBytes*len(h.fields) + valueBytes*len(h.values))
	for _, f := range h.fields {
		n += int64(len(f.name))
	}
	for _, v := range h.values {
		n += int64(len(v))
	}
	return n
}

// clone returns h as a new map whose lists are the caller's own (their
// strings are shared: strings do not change), or nil for a nil h.
func (h *cachedHeader) clone() map[string][]string {
	if h == nil {
		return nil
	}
	m := make(map[string][]string, len(h.fields))
	values := make([]string, len(h.values)) // never nil: an empty list stays empty, not null
	copy(values, h.values)
	off := 0
	for _, f := range h.fields {
		if f.values == nil {
			m[f.name] = nil
			continue
		}
		n := len(f.values)
		m[f.name] = values[off : off+n : off+n]
		off += n
	}
	return m
}
