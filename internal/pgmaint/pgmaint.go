// Package pgmaint holds the maintenance statements that the two PostgreSQL
// drivers (postgres over database/sql, pgxv5 over pgx) share: the ledger
// table's size and its VACUUM.
package pgmaint

// SizeQuery returns the bytes the ledger's table takes with its indexes and
// TOAST.
const SizeQuery = "SELECT pg_total_relation_size('idempotency_ledger'::regclass)"

// Vacuum returns the VACUUM statement for the ledger's table: VACUUM
// (ANALYZE), which makes the space of dead rows reusable and renews the
// planner's statistics without blocking reads or writes, or with full,
// VACUUM (FULL, ANALYZE), which rewrites the table into new files (giving
// the space back to the file system) under an exclusive lock.
func Vacuum(full bool) string {
	if full {
		return "VACUUM (FULL, ANALYZE) idempotency_ledger"
	}
	return "VACUUM (ANALYZE) idempotency_ledger"
}

// Throttle and Unthrottle set and reset, for the session, the cost-based
// delay that the plain VACUUM runs under: the pace of autovacuum's defaults
// since PostgreSQL 12 (autovacuum_vacuum_cost_delay 2 ms, with the
// server's vacuum_cost_limit, 200 by default). A manual VACUUM runs
// unthrottled (vacuum_cost_delay 0), and after a large purge its burst of
// reads and WAL makes requests beside it wait; throttled, it takes longer
// and the load does not notice it (BENCHMARKS.md, "PostgreSQL purge"). VACUUM takes no options for
// this and cannot run in a transaction block, so the setting is the
// session's: the drivers send the three statements on one connection
// taken from the pool and reset it before giving the connection back.
// VACUUM FULL is not throttled: it holds its exclusive lock for as long as
// it runs.
const (
	Throttle   = "SET vacuum_cost_delay = '2ms'"
	Unthrottle = "RESET vacuum_cost_delay"
)
