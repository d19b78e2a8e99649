// Package driver is the boundary between package ledger and the databases
// it runs on. It is for driver implementers: users pick a driver package
// (one per engine and database library; README.md lists them), build its
// Driver over their database and hand it to ledger.New, and never call the
// methods below themselves. Each driver package documents what its engine
// does differently.
//
// A Driver[TTx] holds the database: a pool on which it runs the ledger's
// statements on its own (lease mode, Get, Purge, Stats) and begins
// transactions, and TTx, the type of the transactions of that database
// that callers hand to ledger.Mutate (*sql.Tx or pgx.Tx). An Executor runs
// the ledger's statements, either on the pool ([Driver.DB]) or inside one
// transaction ([Driver.TxExecutor]).
//
// # Times
//
// Times are Unix milliseconds (UTC) and durations are milliseconds. Every
// parameter struct that needs the current time carries Now: 0 asks for the
// engine's clock (the process's clock for SQLite, which serves one
// machine; the server's statement_timestamp() for PostgreSQL, so that
// replicas agree on leases), any other value replaces it (the ledger's
// ledger.Options.Now, which tests use to move time by hand).
//
// # Errors
//
// A driver owns its engine's errors: every method returns the database's
// error marked (Mark) with the sentinels of this package that it matches
// ([ErrRetryable], [ErrBusy], [ErrNotMigrated], [ErrOutcomeUnknown]; a
// *[TooLargeError] for an outcome too large to store), so that the
// ledger and the integrations read no engine's codes, while callers still
// reach the database's own error with [errors.As]. A statement on a
// transaction that is already over returns an error matching database/sql's
// sql.ErrTxDone, whatever the database package: ledger.Mutate reports a
// callback that ended the caller's transaction through it.
//
// # Deadlines
//
// The ledger runs every lease-mode statement ([Executor.Claim], Complete,
// Release, MarkCommitted, Extend and Abandon on DB()) under a context
// whose deadline comes from the lease: the statement must answer by then,
// whatever holds it up. A driver honours the deadline on the client side
// (its database package cuts the call), and, where the engine would go on
// waiting for a lock after its client gave up and then write, bounds that
// wait on the server too, shorter than the time left (PostgreSQL's
// lock_timeout, MariaDB's innodb_lock_wait_timeout per statement), so that
// a lock held past the deadline ends the statement with a busy error
// (ErrBusy: nothing written) rather than an unknown outcome that may still
// be written later. A call the deadline cut short is an unknown outcome
// (ErrOutcomeUnknown), and the ledger reports it so. Inside a caller's
// transaction (TxExecutor) a driver changes no setting of the caller's.
//
// The interfaces may grow new methods in any release, as the ledger needs
// them: implementations outside this module are not supported.
package driver

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Driver is one database as the ledger sees it, with TTx the type of its
// transactions. A Driver is safe for concurrent use when the database
// handle it wraps is (a pool always is; a single connection is not).
type Driver[TTx any] interface {
	// DB returns the Executor on the driver's pool: each statement runs
	// on its own, in autocommit.
	DB() Executor
	// TxExecutor returns the Executor that runs statements inside tx, a
	// transaction of the driver's database begun by the caller.
	TxExecutor(tx TTx) Executor
	// Begin begins a transaction on the driver's pool; Commit and
	// Rollback end it. Rollback of a transaction that is already over
	// returns nil.
	Begin(ctx context.Context) (TTx, error)
	Commit(ctx context.Context, tx TTx) error
	Rollback(ctx context.Context, tx TTx) error
	// BeginLocks reports whether Begin takes the database's write lock at
	// once (SQLite's immediate transactions), so that every transaction
	// waits for every other: a caller answers what it can from a plain
	// read before beginning one.
	BeginLocks() bool
	// IsNilTx reports whether tx is a nil transaction, and NilDB whether
	// the driver was built on a nil database: the ledger refuses both
	// before using them.
	IsNilTx(tx TTx) bool
	NilDB() bool
}

// Preparer is implemented by drivers that prepare their statements ahead
// of use. ledger.New calls Prepare once, before any operation, and
// Ledger.Close calls Close.
type Preparer interface {
	// Prepare prepares the statements on the driver's pool. It may use
	// one of the pool's connections, so it never runs inside an
	// operation; an error (the schema is not migrated, the pool is
	// closed) fails ledger.New.
	Prepare(ctx context.Context) error
	// Close releases the prepared statements; statements run unprepared
	// afterwards. It never closes the database.
	Close() error
}

// Executor runs the ledger's statements on a pool or inside a
// transaction. Times and durations are milliseconds (see the package
// doc). An Executor is safe for concurrent use when what it runs on is.
type Executor interface {
	// Now returns the engine's current time.
	Now(ctx context.Context) (int64, error)
	// Claim claims a key with an atomic conditional write (see
	// [ClaimParams]), attempted only when a plain read of the row shows
	// none, or one that may be taken over: when the row stands
	// (completed and unexpired, in flight under a live lease, or another
	// fingerprint and unexpired) Claim writes nothing, takes no row or
	// write lock of its own, and returns that row (see [ClaimResult]).
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)
	// Get reads a record; a missing one is a nil Row with no error.
	Get(ctx context.Context, p GetParams) (GetResult, error)
	// Complete stores the outcome of the lease in p and reports whether
	// the lease still held (the row was in flight with p's token and
	// fence), and, when the engine returns them, the times it stored (see
	// [CompleteResult]).
	Complete(ctx context.Context, p CompleteParams) (CompleteResult, error)
	// Release ends the in-flight row held by p's lease, unless it
	// carries a commit mark, and reports whether it did: the row stays,
	// in the state "released", with its fence, its fingerprint and its
	// failures plus one, and expires no earlier than p.LeaseMillis after
	// its lease would have run out (see [ReleaseParams]).
	Release(ctx context.Context, p ReleaseParams) (bool, error)
	// MarkCommitted writes the commit mark (the time of p.Now, or of the
	// engine's clock) into the in-flight row held by p's lease, keeping a
	// mark already there, moves the lease's end to at least that time plus
	// p.LeaseMillis, and reports whether the lease still held.
	MarkCommitted(ctx context.Context, p MarkParams) (bool, error)
	// Abandon ends at once the lease held by p.Token, whatever its fence:
	// the row stays in flight, with a lease that has run out.
	Abandon(ctx context.Context, p LeaseParams) error
	// Extend moves the end of p's lease to now plus p.LeaseMillis and
	// returns it; ok is false when the lease no longer held.
	Extend(ctx context.Context, p ExtendParams) (until int64, ok bool, err error)
	// PurgeBatch deletes up to p.Limit rows expired at p.Now, those that
	// expired first, and says how many it deleted and where it stopped
	// (see [PurgeBatchParams.After] and [PurgeBatchResult.Last]).
	PurgeBatch(ctx context.Context, p PurgeBatchParams) (PurgeBatchResult, error)
	// Stats counts the rows, expired ones as of now.
	Stats(ctx context.Context, now int64) (StatsResult, error)
	// FindKey returns up to limit rows with key in any scope, ordered by
	// scope; ListInFlight up to limit rows in flight, oldest claim first.
	// Both read the whole table: they serve operators, not requests.
	FindKey(ctx context.Context, key string, limit int) ([]Row, error)
	ListInFlight(ctx context.Context, limit int) ([]Row, error)
	// TableExists reports whether a table named table is one the
	// ledger's statements reach, which name their tables unqualified:
	// in SQLite's main database, in MySQL's current database, in a
	// schema of PostgreSQL's search_path. When the session has nowhere
	// to look (PostgreSQL, with no schema of the search_path existing)
	// it returns an error saying so, which for the PostgreSQL drivers
	// matches schema.ErrNoCurrentSchema. It only reads the catalog: tools
	// use it to tell a migrated database from another before touching it.
	TableExists(ctx context.Context, table string) (bool, error)
	// ColumnExists reports whether the table that TableExists would
	// find has a column named column; false when there is no such table.
	ColumnExists(ctx context.Context, table, column string) (bool, error)
	// Savepoint, RollbackToSavepoint and ReleaseSavepoint run
	// SAVEPOINT name, ROLLBACK TO SAVEPOINT name and RELEASE SAVEPOINT
	// name. name is an SQL identifier made by the ledger.
	Savepoint(ctx context.Context, name string) error
	RollbackToSavepoint(ctx context.Context, name string) error
	ReleaseSavepoint(ctx context.Context, name string) error
	// Stepper keeps the recorded steps of operations.
	Stepper
}

// Batcher is implemented by the Executors of drivers ([Driver.TxExecutor]'s)
// that can send a savepoint statement together with the ledger statement
// next to it in one round trip. ledger.Mutate uses it when the transaction's
// Executor has it, and otherwise runs the same statements one at a time:
// the results must be the same either way.
//
// In both methods the statements run in order, and a statement that fails
// stops the ones after it: the server never runs them.
type Batcher interface {
	// SavepointClaim runs SAVEPOINT name and then Claim(p). saved
	// reports whether the savepoint was set: when it was not, the claim
	// did not run and err is the SAVEPOINT's error. When it was, res and
	// err are Claim's. An error that leaves it unknown which statements
	// ran (the connection broke, ctx ended) is reported with saved true,
	// as the claim's: the ledger then rolls back to the savepoint, which
	// fails on a broken connection and says so.
	//
	// A driver whose claim reads the row before it writes may read it
	// first and set the savepoint only when the claim goes on to write:
	// when the row stands (see [Executor.Claim]) it returns it with saved
	// false, res.Won false, res.Row and res.Now set, and a nil err, and
	// has written nothing; a failure of that read is returned with saved
	// false too. A claim that wins always has set the savepoint.
	SavepointClaim(ctx context.Context, name string, p ClaimParams) (res ClaimResult, saved bool, err error)
	// CompleteRelease runs Complete(p) and then, only when Complete
	// stored the outcome (the lease held), RELEASE SAVEPOINT name. ok and
	// a non-nil err with released false are Complete's when it failed or
	// the lease did not hold (the savepoint is still open then). When
	// Complete stored the outcome and the RELEASE failed, ok is true,
	// released false and err the RELEASE's.
	CompleteRelease(ctx context.Context, p CompleteParams, name string) (res CompleteResult, released bool, err error)
	// CompleteReleaseCommit is CompleteRelease followed, only when the
	// RELEASE succeeded, by the commit of the Executor's transaction, for
	// a caller that owns the transaction and runs nothing in it
	// afterwards. ok, released and a failure before the commit are as in
	// CompleteRelease (the transaction is still open then). When released
	// is true, committed reports whether the commit succeeded; when it did
	// not, err is the commit's and the transaction is over (rolled back,
	// or, when the connection broke, with an unknown outcome). A driver
	// that can sends the COMMIT in the same round trip as the outcome and
	// the RELEASE.
	CompleteReleaseCommit(ctx context.Context, p CompleteParams, name string) (res CompleteResult, released, committed bool, err error)
}

// ClaimParams is one claim attempt. It wins (inserts or takes over the row)
// when the key has no row, when the row was released, when it has expired
// (ExpiresAt passed and, in flight, its lease too), or when it is in flight
// with a lease that ran out, the same fingerprint, and either no commit
// mark or Recover set; a takeover adds one to the fence. A takeover of an
// expired row clears the commit mark, a recovery keeps it. A new row
// counts 0 failures; a takeover keeps the row's count when the row has not
// expired and has the same fingerprint, and starts again at 0 otherwise.
type ClaimParams struct {
	Scope, Key  string
	Fingerprint []byte
	// Recover allows taking over an in-flight row that carries a commit
	// mark.
	Recover bool
	// Token is the new lease's secret.
	Token string
	// LeaseMillis and TTLMillis are counted from the claim's now.
	LeaseMillis, TTLMillis int64
	// Now is the claim's time; 0 for the engine's clock.
	Now int64
	// ValidUntil, when not 0, is the latest time (Unix milliseconds, the
	// scale of Now) at which the claim may still write: a claim whose
	// write reaches the engine later (its clock, or Now when set, is past
	// ValidUntil) writes nothing and returns [ClaimResult.Late]. A lease-mode
	// claim sets it to when its caller stops waiting (plus an allowance
	// for clocks that disagree), so that a statement held up on its way
	// (a silent network) cannot win a key that nobody will run. A driver
	// whose claim is several statements checks it at each that writes, in
	// the engine's clock when Now is 0.
	ValidUntil int64
}

// MayTakeOver reports whether a claim p at the engine's time now may take
// the stored row r over, the rule of [ClaimParams]: r was released, or has
// expired, or it is in flight with a lease that ran out, p's fingerprint,
// and no commit mark unless p recovers. Drivers whose claim decides in Go
// (between a read and a write, the row locked) use it; the others write it
// in SQL.
func MayTakeOver(r *Row, p ClaimParams, now int64) bool {
	return r.State == "released" || Expired(r, now) || (r.State == "in_flight" && r.LeaseExpiresAt <= now &&
		string(r.Fingerprint) == string(p.Fingerprint) && (r.CommittedAt == 0 || p.Recover))
}

// TakeoverFailures is the count of failed runs that a claim p, taking r
// over at now, continues (the rule of [ClaimParams]): r's own when r has not
// expired and has p's fingerprint, 0 otherwise.
func TakeoverFailures(r *Row, p ClaimParams, now int64) int64 {
	if Expired(r, now) || string(r.Fingerprint) != string(p.Fingerprint) {
		return 0
	}
	return r.Failures
}

// Expired reports whether r has expired at now: its ExpiresAt passed and,
// in flight, its lease ran out too. A takeover of an expired row clears the
// commit mark; any other takeover (a recovery) keeps it.
func Expired(r *Row, now int64) bool {
	return r.ExpiresAt <= now && (r.State != "in_flight" || r.LeaseExpiresAt <= now)
}

// ClaimResult is a claim's answer. When Won is false, Row may hold the row
// as read, with Now the engine's time taken at or after that read (never
// before it: a row unexpired at Now was unexpired when read), so that the
// ledger need not read it again; a nil Row asks the ledger to read it
// ([Executor.Get]). The row may be stale when the claim lost a race; the
// ledger then starts over.
type ClaimResult struct {
	Won bool
	// Late reports that the claim wrote nothing because it reached the
	// engine after [ClaimParams.ValidUntil]; Now is then the engine's time
	// that judged it so.
	Late bool
	// Fence and LeaseExpiresAt describe the won lease; CommittedAt is the
	// commit mark a recovery kept (0 when none); Failures the count of
	// failed runs the won row carries on (see [ClaimParams]).
	Fence, LeaseExpiresAt, CommittedAt, Failures int64
	Row                                          *Row
	Now                                          int64
}

// GetParams names a record; Now is as in ClaimParams.
type GetParams struct {
	Scope, Key string
	Now        int64
}

// GetResult is a read: Row is nil when the key has no record; Now is the
// engine's time at the read or after it, never before (0 when the engine
// cannot tell on a miss).
type GetResult struct {
	Row *Row
	Now int64
}

// Row is a ledger row as stored. Nullable columns read as their zero
// value when NULL; Headers is nil for NULL.
type Row struct {
	Scope, Key     string
	Fingerprint    []byte
	State          string // "in_flight", "completed" or "released"
	LeaseToken     string
	LeaseExpiresAt int64
	Fence          int64
	Status         int64
	Headers        []byte
	Body           []byte
	CreatedAt      int64
	CompletedAt    int64
	ExpiresAt      int64
	// CommittedAt is the commit mark, 0 when none.
	CommittedAt int64
	// Kind is the stored outcome's kind, "" when NULL.
	Kind string
	// Failures counts the runs of the row's operation that ended in
	// Release (see [ClaimParams] for when it starts again at 0).
	Failures int64
}

// LeaseParams identifies a held lease: the row, its token, its fence.
type LeaseParams struct {
	Scope, Key string
	Token      string
	Fence      int64
}

// ReleaseParams ends a held lease with Release. LeaseMillis is the
// ledger's lease: the released row expires no earlier than that long
// after the end of the lease it ends, so that Purge, after which the next
// claim's fence starts again at 1, leaves it while any earlier holder's
// lease may still be running somewhere.
type ReleaseParams struct {
	LeaseParams
	LeaseMillis int64
}

// CompleteParams stores an outcome: the record becomes completed and
// expires TTLMillis after now.
type CompleteParams struct {
	LeaseParams
	Status    int64
	Headers   []byte // nil stores NULL
	Body      []byte
	Kind      string // "" stores NULL
	TTLMillis int64
	Now       int64
}

// CompleteResult is a Complete's answer. OK reports whether the lease held
// and the outcome was stored. When it was, CompletedAt is the row's
// completed_at as stored (its expires_at is CompletedAt plus
// [CompleteParams.TTLMillis]), or 0 when the engine did not report it; and
// when Marked is true, CommittedAt is the row's commit mark as stored (0
// for none), or, when Marked is false, the mark is unknown. The ledger
// keeps a completed row in its cache only from times the engine reported.
type CompleteResult struct {
	OK          bool
	CompletedAt int64
	CommittedAt int64
	Marked      bool
}

// MarkParams writes the commit mark of a held lease at Now, and renews
// the lease for LeaseMillis from then: the holder is alive, and about to
// store its answer, which a retry that found the lease run out and the
// mark there would otherwise declare lost (the lease may have run out while
// the mark waited behind a lock).
type MarkParams struct {
	LeaseParams
	LeaseMillis int64
	Now         int64
}

// ExtendParams moves a lease's end to now plus LeaseMillis.
type ExtendParams struct {
	LeaseParams
	LeaseMillis int64
	Now         int64
}

// PurgeBatchParams deletes up to Limit rows expired at Now (never 0 here:
// the ledger reads Now first), from After on.
type PurgeBatchParams struct {
	Now   int64
	Limit int
	// After, when not 0, is where the batch starts in the order of
	// expiry: it deletes only rows whose expires_at is After or later.
	// The ledger passes the Last of the batch before (never a value a
	// driver did not return), so a batch need not step again over the
	// rows the batches before it deleted; on PostgreSQL their index
	// entries stay until VACUUM, and walking them made every batch slower
	// than the one before. After is inclusive because records
	// share expiry instants: the batch before may have stopped in the
	// middle of Last's.
	After int64
}

// PurgeBatchResult is what one PurgeBatch did: Deleted rows, the latest
// expires_at among them in Last. A driver that returns a Last promises
// that no row expired at the batch's Now and earlier than Last is left,
// except rows it skipped because another transaction held them; rows
// skipped so are left for the next Purge. Last is 0 when the driver does
// not track where it stopped (its batches then start from the head of
// the expiry index each time, and After stays 0).
type PurgeBatchResult struct {
	Deleted int64
	Last    int64
}

// StatsResult counts rows by state (Released: the rows Release left, which
// are neither in flight nor completed); Expired counts the rows PurgeBatch
// would delete at the given now, LeaseExpired the in-flight rows whose
// lease had run out by then, Committed the in-flight rows that carry a
// commit mark. Oldest and Newest are the earliest and latest
// created_at, 0 for an empty table. A driver answers from indexes, never
// reading every row (Stats serves monitoring): every figure is exact except
// Completed when CompletedEstimated is set (an engine's own row estimate,
// less the exact InFlight) and Expired when ExpiredEstimated is set.
type StatsResult struct {
	InFlight, Completed, Released, Expired, LeaseExpired, Committed int64
	Oldest, Newest                                                  int64
	CompletedEstimated                                              bool
	// ExpiredEstimated: Expired is an estimate too (a driver that would
	// otherwise count millions of expired rows one by one).
	ExpiredEstimated bool
	// OldestExpired is the expires_at of the expired row that expired
	// first (what Purge has not caught up with), 0 when none has.
	OldestExpired int64
}

// Reclaimer is implemented by drivers that can give the space of deleted
// rows back (SQLite: to the file system; PostgreSQL: to the table's free
// space, for new rows). Ledger.Purge calls Reclaim(ctx, false) after a purge
// that deleted rows; Ledger.Reclaim calls it for operators.
type Reclaimer interface {
	// Reclaim frees the space of deleted rows. With full false it works in
	// steps short enough to run beside requests (each holds a write lock,
	// if any, for a few milliseconds), and may leave some space for later;
	// with full true it rebuilds the table's storage completely and may
	// block writers until it is done. before and after are the bytes the
	// ledger's storage took (the whole file and its WAL on SQLite, the
	// table and its indexes on PostgreSQL) before and after.
	Reclaim(ctx context.Context, full bool) (before, after int64, err error)
}

// Settler is implemented by drivers whose engine, after a write, has work
// of its own to do that the writer does not wait for (SQLite: the pool's
// checkpoint of its WAL into the database file). Ledger.Purge calls
// Settle after each batch: a purge is background work, and running its
// next batch beside that work would take the processor and the disk from
// the requests, so it waits for it instead.
type Settler interface {
	// Settle returns when the work due after the writes so far is done,
	// at once when none is, or when ctx ends (with ctx's error).
	Settle(ctx context.Context) error
}

// The sentinels a driver marks its errors with (see the package doc,
// Errors). Package ledger turns them into its own (ledger.ErrRetryable,
// ledger.ErrBusy, ledger.ErrNotMigrated, ledger.ErrOutcomeUnknown).
var (
	// ErrRetryable: the database aborted the transaction in a conflict (a
	// serialization failure, a deadlock, a lock it could not get), and a new
	// run of the whole transaction may succeed.
	ErrRetryable = errors.New("driver: retryable")
	// ErrBusy: a lock was not granted within the engine's timeout (SQLite's
	// busy_timeout, PostgreSQL's lock_timeout, MySQL's
	// innodb_lock_wait_timeout): the store works but is contended. Errors marked with
	// it are marked [ErrRetryable] too.
	ErrBusy = errors.New("driver: busy")
	// ErrNotMigrated: the ledger's table does not exist.
	ErrNotMigrated = errors.New("driver: not migrated")
	// ErrOutcomeUnknown: the connection broke, or the engine's storage
	// failed, after the statement may have run: whether it did is unknown.
	ErrOutcomeUnknown = errors.New("driver: outcome unknown")
	// ErrTooLarge: an outcome ([Executor.Complete]) is larger than the
	// engine can store or the connection can carry; nothing was written.
	// Drivers return it as a *TooLargeError.
	ErrTooLarge = errors.New("driver: outcome too large")
	// ErrLeaseLost is ledger.ErrLeaseLost itself, defined here so that a
	// driver can return it where the ledger does not pass: from the
	// commit of a transaction whose queued step record found its lease
	// lost ([StepQueuer]).
	ErrLeaseLost = errors.New("ledger: lease lost")
)

// TooLargeError is the error of a Complete whose outcome the engine cannot
// store: a driver returns it when its own check before sending finds the
// outcome over the engine's limit, or when the engine refuses it for its
// size. Nothing was written, and the lease still holds. errors.Is(err,
// [ErrTooLarge]) reports true for it.
type TooLargeError struct {
	// Size is the outcome's size as the driver counts it against Limit
	// (its body, headers and kind, plus what the statement carries
	// besides, when the limit is on a whole message), in bytes.
	Size int64
	// Limit is the engine's limit in bytes, 0 when the engine refused the
	// outcome without saying.
	Limit int64
	// Err is the engine's error, nil when the driver's check refused the
	// outcome before sending it.
	Err error
}

// Error states the size and the limit.
func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("%v: %d bytes", ErrTooLarge, e.Size)
	if e.Limit > 0 {
		msg += fmt.Sprintf(", over the limit of %d", e.Limit)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the engine's error.
func (e *TooLargeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// OutcomeSize is the size of p's outcome: its body, headers and kind.
func OutcomeSize(p CompleteParams) int64 {
	return int64(len(p.Body)) + int64(len(p.Headers)) + int64(len(p.Kind))
}

// Mark returns err marked with the sentinels in kinds: [errors.Is] reports
// true for each of them as well as for everything err matches, Unwrap
// gives err, and the text is err's. A nil err stays nil.
func Mark(err error, kinds ...error) error {
	if err == nil || len(kinds) == 0 {
		return err
	}
	return &marked{err: err, kinds: kinds}
}

type marked struct {
	err   error
	kinds []error
}

func (m *marked) Error() string { return m.err.Error() }
func (m *marked) Unwrap() error { return m.err }
func (m *marked) Is(target error) bool {
	for _, k := range m.kinds {
		if k == target {
			return true
		}
	}
	return false
}

// ConnectionLost reports whether err says that the connection to the
// database broke, whatever the engine: the network failed (reset,
// refused, timed out, closed), the server's reply ended early, or
// database/sql's driver gave the connection up (driver.ErrBadConn).
// Drivers mark such errors ErrOutcomeUnknown.
func ConnectionLost(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr)
}
