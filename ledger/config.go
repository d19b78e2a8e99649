package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Defaults applied by New to Config fields left at their zero value.
const (
	DefaultTTL          = 24 * time.Hour
	DefaultLease        = time.Minute
	DefaultMaxKeyLength = 255 // bytes
)

// MaxScopeLength is the longest scope accepted, in bytes.
const MaxScopeLength = 255

// Config configures a Ledger. The zero value of every field means "use the
// default"; New refuses values that are out of range. Durations are stored
// as whole milliseconds (the ledger keeps Unix milliseconds), so a positive
// duration under one millisecond is refused too. Neither a TTL nor a lease
// can be "forever": pick a long duration instead.
type Config struct {
	// TTL is how long a completed record keeps answering retries with its
	// outcome, counted from completion. Once it has passed, the next claim
	// with the key (whatever its fingerprint) starts afresh. Default 24 h;
	// negative is ErrInvalidConfig.
	TTL time.Duration

	// Lease is how long a claim holds its key before another request with
	// the same fingerprint may take it over, counted from the claim (or the
	// last Extend). Default 1 min; negative is ErrInvalidConfig.
	Lease time.Duration

	// Now returns the current time. Tests set it to move time by hand. It
	// must be safe for concurrent use. Unset, it is time.Now on SQLite and
	// the database server's clock on PostgreSQL; set, it replaces the
	// server's clock on PostgreSQL too, so every replica must then agree on
	// the time it returns.
	Now func() time.Time

	// Engine is the database engine of the databases the ledger is used
	// on: SQLite (the zero value) or Postgres. Other values are
	// ErrInvalidConfig.
	Engine Engine

	// MaxKeyLength is the longest idempotency key accepted, in bytes.
	// Default 255; negative is ErrInvalidConfig.
	MaxKeyLength int

	// DB, when set, is the pool the ledger's statements are prepared on,
	// once, by New (the schema must be migrated by then). Operations
	// given DB itself or a *sql.Tx begun on DB reuse them, which makes
	// each operation much cheaper in CPU: without DB, every call parses
	// its SQL again, since database/sql reuses a statement only on the
	// pool it was prepared on. Any other DBTX (another pool, a
	// transaction of another pool, a *sql.Conn) still works, without the
	// reuse. The ledger does not own DB: close the Ledger (Ledger.Close)
	// before DB, or leave both to the end of the process. Only the SQLite
	// engine uses DB; the PostgreSQL engine ignores it, since pgx's
	// database/sql driver already caches prepared statements per
	// connection.
	DB *sql.DB
}

// Ledger records claims and outcomes by (scope, key). It holds no
// connection: every operation takes the database (or transaction) to work
// on, so that callers decide what commits together; with Config.DB it holds
// statements prepared on that pool, which Close releases. A Ledger is
// immutable after New and safe for concurrent use by multiple goroutines.
type Ledger struct {
	ttl, lease time.Duration
	maxKey     int
	engine     Engine
	eng        engine
}

// New returns a Ledger for cfg, with defaults in place of zero fields. It
// returns an error wrapping ErrInvalidConfig when TTL, Lease or
// MaxKeyLength is negative, when TTL or Lease is under one millisecond, or
// when Engine is unknown. The ledger works on SQLite databases migrated
// with schema.Migrate, or PostgreSQL ones migrated with
// schema.MigratePostgres (Config.Engine says which).
//
// With cfg.DB (SQLite only) New also prepares the statements on that pool,
// using one of its connections (so it waits while all of them are busy),
// and returns the database's error, wrapped with "ledger: prepare:", when
// that fails (the schema is not migrated, the pool is closed).
func New(cfg Config) (*Ledger, error) {
	l := &Ledger{
		ttl:    cfg.TTL,
		lease:  cfg.Lease,
		maxKey: cfg.MaxKeyLength,
		engine: cfg.Engine,
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
	if l.ttl < time.Millisecond {
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", ErrInvalidConfig, l.ttl)
	}
	if l.lease < time.Millisecond {
		return nil, fmt.Errorf("%w: lease %v is below 1ms", ErrInvalidConfig, l.lease)
	}
	if l.maxKey < 0 {
		return nil, fmt.Errorf("%w: MaxKeyLength %d is negative", ErrInvalidConfig, l.maxKey)
	}
	switch cfg.Engine {
	case SQLite:
		now := cfg.Now
		if now == nil {
			now = time.Now
		}
		// New takes no context: preparing on a local SQLite file only
		// reads its schema.
		eng, err := newSQLiteEngine(context.Background(), now, cfg.DB)
		if err != nil {
			return nil, fmt.Errorf("ledger: prepare: %w", err)
		}
		l.eng = eng
	case Postgres:
		l.eng = postgresEngine{clock: cfg.Now} // nil: the server's clock
	default:
		return nil, fmt.Errorf("%w: unknown engine %v", ErrInvalidConfig, cfg.Engine)
	}
	return l, nil
}

// Close releases the statements prepared on Config.DB; without Config.DB
// it does nothing. Call it once no operation is running: operations after
// Close still work, without prepared statements, but one that runs during
// Close on Config.DB itself may fail with "sql: statement is closed".
// Closing Config.DB releases the statements too. Close returns the error of
// closing a statement, if any; a second Close returns nil. Close of a nil
// *Ledger returns an error wrapping ErrInvalidRequest.
func (l *Ledger) Close() error {
	if l == nil {
		return invalidRequest("nil ledger")
	}
	if c, ok := l.eng.(interface{ close() error }); ok {
		return c.close()
	}
	return nil
}

// TTL returns how long a completed record replays (see Config.TTL).
func (l *Ledger) TTL() time.Duration { return l.ttl }

// Lease returns how long a claim holds its key (see Config.Lease).
func (l *Ledger) Lease() time.Duration { return l.lease }

// Engine returns the database engine the ledger works on (see
// Config.Engine).
func (l *Ledger) Engine() Engine { return l.engine }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
