// Package mysql is the ledger's driver for MySQL 8.0 and MariaDB 10.6 or
// later, over database/sql with github.com/go-sql-driver/mysql: build it
// with [New] on the application's *sql.DB, hand it to ledger.New, and call
// ledger.Mutate with a *sql.Tx of the same pool, so that the business
// writes and the record commit together.
//
//	db, err := sql.Open("mysql", "app:secret@tcp(db:3306)/shop")
//	...
//	if err := schema.Migrate(ctx, mysql.New(db)); err != nil { ... }
//	l, err := ledger.New(mysql.New(db), ledger.Options{})
//
// The table is created by schema.Migrate (golang-migrate's mysql driver,
// recording in idemledger_schema_migrations, one statement at a time, so
// that the DSN needs no multiStatements), in the DSN's database.
//
// # Migrations
//
// A run of schema.Migrate holds golang-migrate's named lock (GET_LOCK, a
// session lock, on a connection borrowed from the pool for the run), and
// schema.Version takes the same lock, so it never reads a run in progress.
// MySQL commits each DDL statement as it runs: a migration that fails
// leaves the database dirty at its version.
//
// # What differs from PostgreSQL
//
// The API and the guarantees are the same; the statements are not.
//
//   - MySQL has no UPDATE ... RETURNING, so a claim is a plain read, then
//     an INSERT for a new key, or a locking read and an UPDATE for a
//     takeover (see [Driver] and queries/mysql). A replay is answered from
//     the plain read: no lock, no write.
//   - Under REPEATABLE READ (the default) a plain read inside a transaction
//     sees the transaction's snapshot. A duplicate that waited for a first
//     request still replays its outcome: the INSERT's duplicate-key error
//     sends the claim to a locking read, which sees the latest row. A row
//     the snapshot shows in flight may have completed since: the claim then
//     answers in flight, and the retry replays. READ COMMITTED works too.
//   - A deadlock (1213) matches ledger.ErrRetryable: InnoDB rolled the
//     caller's transaction back, and the caller runs it again, as after a
//     serialization failure on PostgreSQL. A lock wait that timed out
//     (1205) and a server out of connections (1040) match ledger.ErrBusy,
//     which the middleware answers as a busy store.
//   - Scopes, keys and lease tokens are binary strings, compared byte for
//     byte: whatever the server's collations, "Key", "key" and "key " are
//     three keys. Keys are at most 1024 bytes (ledger.MaxKeyLengthLimit),
//     scopes 255, which keeps the primary key under InnoDB's 3,072-byte
//     index limit.
//   - Leases and expiry run on the server's clock, read as UNIX_TIMESTAMP()
//     and the fraction of NOW(6), so that no session time zone moves it.
//   - A takeover inside the caller's transaction keeps the row locked until
//     that transaction ends, also when the row stood after all.
//   - Purge deletes expired rows oldest expiry first in batches of
//     DELETE ... ORDER BY expires_at LIMIT n.
//   - An outcome travels to the server in one packet, which the server
//     refuses above its max_allowed_packet (1153, 16 MiB by default on
//     MariaDB, 64 MiB on MySQL 8.0) and then drops the connection. The
//     driver reads max_allowed_packet from the server when ledger.New
//     prepares its statements, and refuses a larger outcome before sending
//     it: Complete returns ledger.ErrOutcomeTooLarge (with the limit),
//     stores nothing and keeps the lease, so that a smaller outcome, such
//     as a marker that the answer was not kept, can be stored instead. A
//     refusal it did not foresee (the server's 1153, go-sql-driver's own
//     limit of the DSN's maxAllowedPacket) is reported the same way. Raise
//     max_allowed_packet on the server to keep larger answers.
//   - A lease-mode statement that waits for another transaction's row
//     lock gives up before the lease ends (see the driver package doc,
//     Deadlines). On MariaDB it carries its own innodb_lock_wait_timeout
//     (SET STATEMENT ... FOR), and the wait ends with 1205 (ledger.ErrBusy,
//     nothing written). MySQL 8.0 cannot set that variable for one
//     statement: there the client gives up at the deadline and reports an
//     unknown outcome (ledger.ErrOutcomeUnknown), and the server may still
//     write once the lock is gone, up to innodb_lock_wait_timeout later;
//     keep that setting short on MySQL 8.0.
//
// # Speed
//
// Every statement is a round trip, and each costs the client and the
// server their work around it: at one client the round trips set a
// request's pace; with many clients on few cores, the CPU both sides spend
// per statement does (BENCHMARKS.md). ledger.New prepares the
// statements every request runs (the claim's read, its INSERT in the two
// forms of lease mode and of Mutate, the outcome's UPDATE) on the pool
// (see [Driver.Prepare]), so that each is one
// round trip on any connection, a caller's *sql.Tx included, instead of a
// prepare and an execute. A first Mutate is then five round trips of the
// ledger's own (the read, which carries the server's clock, SAVEPOINT, the
// INSERT, the outcome, RELEASE); a replay is the read alone, with no
// savepoint around it. The application's own statements with parameters
// cost two round trips each under go-sql-driver's default DSN;
// interpolateParams=true sends each in one (the client then escapes the
// parameters, in the connection's character set).
//
// MariaDB 10.11 is tested; MySQL 8.0 is not (the SQL keeps to what both
// share). Vitess and PlanetScale do not support savepoints inside
// transactions the way Mutate needs them; TiDB's optimistic transactions
// report conflicts at COMMIT: neither is supported.
package mysql
