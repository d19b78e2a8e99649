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
