// Package sqlite opens SQLite databases (modernc.org/sqlite, no cgo) with the
// settings that idemledger relies on, and checks that they took effect.
//
// The settings, and why:
//
//   - journal_mode=WAL: readers never block the writer and the writer never
//     blocks readers (https://sqlite.org/wal.html).
//   - busy_timeout: a writer that finds the database locked waits instead of
//     failing at once with SQLITE_BUSY (https://sqlite.org/pragma.html#pragma_busy_timeout).
//   - _txlock=immediate: every transaction begun through database/sql is
//     BEGIN IMMEDIATE, so it takes the write lock when it starts. A deferred
//     transaction that reads first and writes later fails with
//     SQLITE_BUSY_SNAPSHOT when another writer committed in between, and no
//     timeout helps it (https://sqlite.org/lang_transaction.html).
//   - synchronous: FULL by default. See [Synchronous].
//
// Open reads every pragma back on a live connection, as litestream does, so a
// DSN that was silently ignored (a typo, a read-only file, an in-memory
// database that cannot use WAL) is an error instead of a surprise.
//
// # Clock
//
// Leases and expiry are judged by the process's clock (ledger.Options.Now,
// time.Now by default): SQLite serves one machine, whose processes share
// that clock.
//
// # Migrations
//
// The tables live in the file. Each run of schema.Migrate holds SQLite's
// write lock from its first read of the version to its last write, so one
// applies the migrations and the others wait (up to busy_timeout, 10 s
// with [Open], then SQLITE_BUSY), then find nothing to do; nothing a run
// writes is visible to other connections before it ends, and a process
// that dies during a run leaves the file as it was. schema.Version sees
// only committed runs. A migration that fails is undone and leaves the
// database dirty at its version, as golang-migrate records it.
//
// # Writers in order
//
// SQLite admits one writer at a time, and every transaction begun on a
// database opened here is a writer. Left to SQLite, the pool's connections
// that want the write lock at once wait inside its busy handler, which
// sleeps and polls (1, 2, 5, 10 … 100 ms) and serves no one in order: with
// 8 clients single requests waited seconds while the 99th percentile stayed
// at a few milliseconds. So the *sql.DB that [Open] returns queues its
// writers in Go before they reach SQLite: at most one of its connections at
// a time is in a write transaction or runs a writing statement. A writer
// that finds the gate free goes through even while others wait, as long as
// the first of them has waited less than 10 ms; past that, the gate is
// handed to the waiters in the order they came, so no writer waits much
// longer than 10 ms plus one transaction for each writer ahead of it. Strict
// order would cost throughput: SQLite empties a connection's page cache
// when it begins a transaction after another connection wrote, and the
// writer that finds the gate free is nearly always the connection that
// wrote last, its cache still warm. Background work never goes ahead that
// way: a purge's batch or a reclaim's step (begun under a context marked
// by driver.Background) takes a free gate only when no writer waits. What
// passes the gate:
//
//   - a transaction begun with BeginTx (BEGIN IMMEDIATE), from BEGIN until
//     Commit or Rollback; a read-only one (sql.TxOptions{ReadOnly: true})
//     begins deferred and does not wait;
//   - a statement outside a transaction that may write (anything but
//     SELECT, VALUES, EXPLAIN and PRAGMAs that only read), for its run; a
//     query's until its rows are closed;
//   - BEGIN … COMMIT executed as text on one connection (sql.Conn), from the
//     BEGIN to the COMMIT, END or ROLLBACK. A connection handed back to the
//     pool with such a transaction open is closed, which rolls it back.
//
// Reads outside a transaction never wait for it, and run beside the writer
// thanks to WAL.
//
// The pool checkpoints the WAL itself, and SQLite's automatic checkpoint
// is off on its connections (wal_autocheckpoint=0). SQLite's own runs
// inside the COMMIT that takes the WAL past 1,000 pages, while the gate
// holds the other writers behind it, so they all waited for the copy and
// its sync. Instead, every 1,000 pages the pool's writers wrote, a
// goroutine of the pool, on a connection of its own, copies the WAL into
// the database file (a PASSIVE checkpoint) while the writers go on. Such a
// checkpoint never reaches the end of a WAL that writers keep appending to,
// and SQLite starts the WAL over only after one did; so once the WAL holds
// 4,000 pages (about 16 MB), that goroutine queues for the gate like a
// writer and, holding it, copies what is left (the tail appended while it
// last copied), waiting at most 10 ms for readers still on the WAL. The
// next writer then starts the WAL over. Should the goroutine fall behind,
// the writer that takes the WAL to 8,000 pages does the same before it
// gives the gate back. A reader that holds the WAL longer (a long read
// transaction, another process's backup) keeps it from starting over, as
// under SQLite's own checkpoint; it is tried again 1,000 pages later.
// Right after a write, the WAL may hold what SQLite's checkpoint would
// already have copied into the file: the file's size alone is not the
// data's.
//
// Background work (ledger.Purge's batches, Reclaim's steps) waits between
// two of its transactions for the checkpoint its writes made due, every
// 256 pages ([Driver.Settle]), instead of running beside it: the two
// together kept both processors and the disk busy, and a request waited
// for a turn on either. While such work is at it, the goroutine does not
// take the gate for the WAL's bound: while the work waits, only requests
// write, a few pages each, so a PASSIVE checkpoint reaches the end of the
// WAL, and the next writer starts it over. (Beside a purge, the checkpoint
// inside the gate held every request for the copy of the WAL's tail and
// its two syncs: BENCHMARKS.md, "SQLite purge".)
//
// A wait for the gate is bounded by the busy timeout, as a wait for the lock
// was: past it the write fails with an error that reads as SQLITE_BUSY
// (busy and retryable for the ledger). The wait then in SQLite for another
// process's writer is bounded by busy_timeout again.
//
// What the caller's own writes must do: go through the same *sql.DB, in a
// transaction or as statements (ledger.Mutate's fn writes through the
// *sql.Tx it is given, as it must anyway). A write through the pool while the
// same goroutine holds a write transaction waits for itself until the busy
// timeout (before the gate it waited in SQLite the same time). A second
// *sql.DB on the same file, or a pool built by hand with [DSN], has its own
// queue or none, and meets this one in SQLite's busy handler like another
// process: open a file once per process.
//
// # Pools and processes
//
// Extra connections beyond the first only help readers. Open caps the pool
// (see [Options].MaxOpenConns); the default leaves room for a few
// concurrent readers. A pool of one connection is the fastest writer, but
// then any code that uses the pool while it holds a transaction (for
// example a ledger.Mutate callback that queries the *sql.DB instead of the
// *sql.Tx it was given) deadlocks.
//
// Several processes may write the same file: each process's writers queue
// in its own gate, and the one writer of each meets the others in SQLite,
// where busy_timeout makes them wait. SQLite serves those few in no
// particular order, so keep the number of processes writing one file small.
//
// # Opening a file several processes open at once
//
// Several processes (or goroutines) may open the same file at once, even
// one that does not exist yet. A new file's first connections switch it
// to WAL, which needs the write lock; when another process holds it,
// SQLite fails at once with SQLITE_BUSY instead of waiting. Open then
// tries again on a new connection after a short random sleep (about 1 ms
// at first, growing to at most 50 ms), for up to the busy timeout after
// its first try.
package sqlite
