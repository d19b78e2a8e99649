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
// # Pools and the single writer
//
// SQLite admits one writer at a time. Every transaction begun on a database
// opened here is a writer, so extra connections beyond the first only help
// readers and queue for the write lock inside SQLite's busy handler, which
// polls. Open therefore caps the pool (see [Options].MaxOpenConns); the default
// leaves room for a few concurrent readers while keeping the queue of
// writers short, and the Go pool queues the rest fairly. A pool of one
// connection is the fastest writer, but then any code that uses the pool
// while it holds a transaction (for example a ledger.Mutate callback that
// queries the *sql.DB instead of the *sql.Tx it was given) deadlocks.
//
// When several processes write the same file, give each a pool of one
// connection (Options{MaxOpenConns: 1}), or very few: SQLite's busy handler
// polls with growing sleeps and serves waiters in no particular order, so
// with many connections polling across processes one of them can wait past
// busy_timeout and fail with SQLITE_BUSY. Inside a process, the Go pool
// queues waiting goroutines in order instead.
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
