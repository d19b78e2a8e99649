package ledger

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/idemledger/idemledger/driver"
)

// Defaults applied by New to Options fields left at their zero value.
const (
	DefaultTTL          = 24 * time.Hour
	DefaultLease        = time.Minute
	DefaultMaxKeyLength = 255 // bytes
	DefaultClaimTimeout = 5 * time.Second
)

// MaxClockSkew is how far the clocks of the application's hosts and of the
// database server may disagree for a lease-mode claim's bound to work as
// documented (see [Options.ClaimTimeout]): the bound is set by this process's
// clock and judged by the store's, with MaxClockSkew added. Keep the
// clocks synchronized (NTP agrees within milliseconds). A store whose clock
// runs further ahead refuses claims as late; the ledger then sets the bound
// again from the store's clock as the refusal reported it, at the cost of
// a second statement.
const MaxClockSkew = time.Second

// MaxScopeLength is the longest scope accepted, in bytes.
const MaxScopeLength = 255

// MaxKeyLengthLimit is the largest [Options.MaxKeyLength] that New accepts,
// in bytes. Scope and key together form the ledger's primary key, and a
// PostgreSQL B-tree index entry holds at most about 2,700 bytes (2,704 on
// an 8 kB page): a longer key would be refused by the server on every
// try, as if the store were down.
const MaxKeyLengthLimit = 1024

// Options configures a Ledger. The zero value of every field means "use the
// default"; New refuses values that are out of range. Durations are stored
// as whole milliseconds (the ledger keeps Unix milliseconds), so a positive
// duration under one millisecond is refused too. Neither a TTL nor a lease
// can be "forever": pick a long duration instead.
type Options struct {
	// TTL is how long a completed record keeps answering retries with its
	// outcome, counted from completion. Once it has passed, the next claim
	// with the key (whatever its fingerprint) starts afresh. Default 24 h;
	// negative is ErrInvalidOptions.
	TTL time.Duration

	// Lease is how long a claim holds its key before another request with
	// the same fingerprint may take it over, counted from the claim (or the
	// last Extend). Default 1 min; negative is ErrInvalidOptions.
	Lease time.Duration

	// Now returns the current time. Tests set it to move time by hand. It
	// must be safe for concurrent use. Unset, it is the engine's clock:
	// [time.Now] where the engine serves one machine, the database server's
	// where replicas share it (the driver's package documentation says
	// which); set, it replaces a server's clock too, so every replica must
	// then agree on the time it returns.
	Now func() time.Time

	// ClaimTimeout bounds a lease-mode claim ([Ledger.Claim]): its
	// statements must answer within it, and a claim statement that reaches
	// the store later than that (plus [MaxClockSkew]), held up on its way
	// after its caller stopped waiting, does not win the key, so that a
	// request that gave up never leaves the key held for a whole lease by
	// a claim that no handler will run. A context deadline sooner than it
	// takes its place. Default 5 s; at most Lease, or one second when the
	// lease is shorter (a longer one is cut to that); negative is
	// ErrInvalidOptions.
	ClaimTimeout time.Duration

	// MaxKeyLength is the longest idempotency key accepted, in bytes: the
	// one key-length setting (idemhttp reads it from the ledger). Default
	// 255; negative, or above [MaxKeyLengthLimit] (1024), is
	// ErrInvalidOptions.
	MaxKeyLength int

	// CacheBytes bounds the memory of the cache of completed outcomes, in
	// bytes: a replay of a record this process has read completed (or a
	// claim of its key with another fingerprint, [ErrKeyReused]) is
	// answered from memory by Claim, Lookup, Mutate and Recall, without
	// the database, until a margin before the record expires. 0 means
	// [DefaultCacheBytes]; [CacheOff] (or any negative value) turns the cache
	// off. See the package doc, The cache of completed outcomes, for when
	// its answers are the database's and when not.
	CacheBytes int64

	// Observer receives the ledger's own events, [EventCacheHit] and
	// [EventCacheMiss], synchronously on the goroutine of the call (see
	// [Observer]); nil reports none. The integrations report the events of
	// each request to an Observer of their own: pass the same one to both
	// to see both.
	Observer Observer
}

// Ledger records claims and outcomes by (scope, key) in the database of its
// driver; TTx is the type of that database's transactions (*sql.Tx or
// pgx.Tx), which Mutate takes. Lease mode, Get, Purge and Stats run on the
// driver's pool. A Ledger is immutable after New and safe for concurrent use
// by multiple goroutines when its driver's database is (a pool is; a single
// *pgx.Conn is not). It does not own the database: Close the Ledger, then
// the database.
type Ledger[TTx any] struct {
	ttl, lease time.Duration
	// claimTimeout is Options.ClaimTimeout, at most lease (or 1 s).
	claimTimeout time.Duration
	maxKey       int
	now          func() time.Time // nil: the engine's clock
	d            driver.Driver[TTx]
	db           driver.Executor
	cache        *outcomeCache // nil: off
	obs          Observer
}

// New returns a Ledger on the database of d (the New of a driver package,
// such as sqlite.New), with defaults in place of zero Options fields. It returns an
// error wrapping [ErrInvalidOptions] when TTL, Lease, ClaimTimeout or MaxKeyLength is
// negative, when TTL or Lease is under one millisecond, when MaxKeyLength
// exceeds [MaxKeyLengthLimit], or when d or its database is nil. A driver
// that prepares statements (a [driver.Preparer]) prepares them here, on one connection
// of its pool (so New waits while all are busy); New returns that error,
// wrapped with "ledger: prepare:", when it fails: one matching
// [ErrNotMigrated] when the ledger's table is missing, or the pool's error.
func New[TTx any](d driver.Driver[TTx], opts Options) (*Ledger[TTx], error) {
	if d == nil || d.NilDB() {
		return nil, fmt.Errorf("%w: nil driver or database", ErrInvalidOptions)
	}
	l := &Ledger[TTx]{
		ttl:    opts.TTL,
		lease:  opts.Lease,
		maxKey: opts.MaxKeyLength,
		now:    opts.Now,
		d:      d,
		db:     d.DB(),
		obs:    opts.Observer,
	}
	if l.ttl == 0 {
		l.ttl = DefaultTTL
	}
	if l.lease == 0 {
		l.lease = DefaultLease
	}
	if l.maxKey == 0 {
		l.maxKey = DefaultMaxKeyLength
	}
	if opts.ClaimTimeout < 0 {
		return nil, fmt.Errorf("%w: ClaimTimeout %v is negative", ErrInvalidOptions, opts.ClaimTimeout)
	}
	l.claimTimeout = cmp.Or(opts.ClaimTimeout, DefaultClaimTimeout)
	if l.ttl < time.Millisecond {
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", ErrInvalidOptions, l.ttl)
	}
	if l.lease < time.Millisecond {
		return nil, fmt.Errorf("%w: lease %v is below 1ms", ErrInvalidOptions, l.lease)
	}
	// Within the lease, as the lease's own statements (see persist), and
	// like them given a second at least.
	l.claimTimeout = min(l.claimTimeout, max(l.lease, persistMinBudget))
	if l.maxKey < 0 {
		return nil, fmt.Errorf("%w: MaxKeyLength %d is negative", ErrInvalidOptions, l.maxKey)
	}
	if l.maxKey > MaxKeyLengthLimit {
		return nil, fmt.Errorf("%w: MaxKeyLength %d is above %d", ErrInvalidOptions, l.maxKey, MaxKeyLengthLimit)
	}
	switch cb := opts.CacheBytes; {
	case cb == 0:
		l.cache = newOutcomeCache(DefaultCacheBytes)
	case cb > 0:
		l.cache = newOutcomeCache(cb)
	}
	if p, ok := d.(driver.Preparer); ok {
		// New takes no context: preparing on a local SQLite file only
		// reads its schema.
		if err := p.Prepare(context.Background()); err != nil {
			return nil, wrapOp("prepare", classify(err))
		}
	}
	return l, nil
}

// Close releases what the driver prepared for the ledger (the sqlite
// driver's statements); it never closes the database. Call it once no
// operation is running: operations after Close still work, unprepared.
// It returns the error of releasing a statement, if any; a second Close
// returns nil. Close of a nil *Ledger returns an error wrapping
// ErrInvalidRequest.
func (l *Ledger[TTx]) Close() error {
	if l == nil {
		return invalidRequest("nil ledger")
	}
	if p, ok := l.d.(driver.Preparer); ok {
		return p.Close()
	}
	return nil
}

// TTL returns how long a completed record replays (see [Options.TTL]).
func (l *Ledger[TTx]) TTL() time.Duration { return l.ttl }

// Lease returns how long a claim holds its key (see [Options.Lease]).
func (l *Ledger[TTx]) Lease() time.Duration { return l.lease }

// MaxKeyLength returns the longest idempotency key accepted, in bytes
// (see [Options.MaxKeyLength]).
func (l *Ledger[TTx]) MaxKeyLength() int { return l.maxKey }

// Driver returns the driver the ledger was built with.
func (l *Ledger[TTx]) Driver() driver.Driver[TTx] { return l.d }

// clock is the Now of the driver's parameters: Options.Now in Unix
// milliseconds, or 0 for the engine's clock.
func (l *Ledger[TTx]) clock() int64 {
	if l.now == nil {
		return 0
	}
	return l.now().UnixMilli()
}

// nowMillis is the ledger's current time: Options.Now, or the engine's.
func (l *Ledger[TTx]) nowMillis(ctx context.Context, ex driver.Executor) (int64, error) {
	if l.now != nil {
		return l.now().UnixMilli(), nil
	}
	return ex.Now(ctx)
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
